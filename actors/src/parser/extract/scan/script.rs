//! The script data states of the tokenizer: text up to `</script>`, except inside `<!--` ... `-->` where
//! `<script>` starts a double escaped part in which `</script>` does not end the element.

use memchr::{memchr, memchr2};

use super::{Scanner, Sink, TextMode, is_ws, starts_with_ci};

impl Scanner<'_> {
    /// Script data, with its escaped (`<!--`) and double escaped (`<!--<script>`) states.
    pub(super) fn script<S: Sink>(&mut self, sink: &mut S) -> Option<TextMode> {
        let input = self.input;
        let len = input.len();
        let mut p = self.pos;
        let mut state = Script::Normal;
        loop {
            match state {
                Script::Normal => {
                    let Some(off) = memchr(b'<', &input[p..]) else {
                        break;
                    };
                    let lt = p + off;
                    match input.get(lt + 1) {
                        None => break,
                        Some(b'/') => match self.closing_tag(lt) {
                            Ok(name_end) => {
                                let hash = self.last_start;
                                return self.end_tag(sink, lt, lt + 2..name_end, hash);
                            }
                            Err(resume) => p = resume,
                        },
                        Some(b'!') if input[lt + 2..].starts_with(b"--") => {
                            p = lt + 4;
                            state = Script::EscapedDashDash;
                        }
                        Some(b'!') => p = lt + 2,
                        Some(_) => p = lt + 1,
                    }
                }
                Script::EscapedDashDash => match input.get(p) {
                    None => break,
                    Some(b'-') => p += 1,
                    Some(b'<') => {
                        p += 1;
                        state = Script::EscapedLessThan(p - 1);
                    }
                    Some(b'>') => state = Script::Normal,
                    Some(_) => {
                        p += 1;
                        state = Script::Escaped;
                    }
                },
                Script::Escaped => {
                    let Some(off) = memchr2(b'-', b'<', &input[p..]) else {
                        break;
                    };
                    let at = p + off;
                    if input[at] == b'<' {
                        p = at + 1;
                        state = Script::EscapedLessThan(at);
                    } else if input.get(at + 1) == Some(&b'-') {
                        p = at + 2;
                        state = Script::EscapedDashDash;
                    } else {
                        p = at + 1;
                    }
                }
                Script::EscapedLessThan(lt) => {
                    if starts_with_ci(input, p, b"SCRIPT") {
                        match input.get(p + 6) {
                            None => break,
                            Some(&c) if is_ws(c) || c == b'/' || c == b'>' => {
                                p += 7;
                                state = Script::DoubleEscaped;
                            }
                            Some(_) => {
                                p += 6;
                                state = Script::Escaped;
                            }
                        }
                    } else if input.get(p) == Some(&b'/') {
                        match self.closing_tag(lt) {
                            Ok(name_end) => {
                                let hash = self.last_start;
                                return self.end_tag(sink, lt, lt + 2..name_end, hash);
                            }
                            Err(resume) => {
                                p = resume;
                                state = Script::Escaped;
                            }
                        }
                    } else {
                        state = Script::Escaped;
                    }
                }
                Script::DoubleEscaped => {
                    let Some(off) = memchr2(b'-', b'<', &input[p..]) else {
                        break;
                    };
                    let at = p + off;
                    if input[at] == b'<' {
                        p = at + 1;
                        state = Script::DoubleEscapedLessThan;
                    } else if input.get(at + 1) == Some(&b'-') {
                        p = at + 2;
                        state = Script::DoubleEscapedDashDash;
                    } else {
                        p = at + 1;
                    }
                }
                Script::DoubleEscapedDashDash => match input.get(p) {
                    None => break,
                    Some(b'-') => p += 1,
                    Some(b'<') => {
                        p += 1;
                        state = Script::DoubleEscapedLessThan;
                    }
                    Some(b'>') => state = Script::Normal,
                    Some(_) => {
                        p += 1;
                        state = Script::DoubleEscaped;
                    }
                },
                Script::DoubleEscapedLessThan => {
                    if input.get(p) == Some(&b'/') && starts_with_ci(input, p + 1, b"SCRIPT") {
                        match input.get(p + 7) {
                            None => break,
                            Some(&c) if is_ws(c) || c == b'/' || c == b'>' => {
                                p += 8;
                                state = Script::Escaped;
                            }
                            Some(_) => {
                                p += 7;
                                state = Script::DoubleEscaped;
                            }
                        }
                    } else if input.get(p) == Some(&b'/') {
                        p += 1;
                        state = Script::DoubleEscaped;
                    } else {
                        state = Script::DoubleEscaped;
                    }
                }
            }
            if p >= len {
                break;
            }
        }
        self.text_until(sink, len);
        None
    }
}

/// The script data states past plain script text.
#[derive(Clone, Copy)]
enum Script {
    Normal,
    Escaped,
    EscapedDashDash,
    /// After `<` in escaped script data (its position).
    EscapedLessThan(usize),
    DoubleEscaped,
    DoubleEscapedDashDash,
    DoubleEscapedLessThan,
}
