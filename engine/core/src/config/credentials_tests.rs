//! `[[fetch.credentials]]` as the loader reads it: every problem names its key, no message shows a value.

use super::tests::{errors, ok};
use super::*;

fn messages(text: &str) -> Vec<String> {
    errors(text).into_iter().map(|e| e.message).collect()
}

#[test]
fn tables_are_read_per_origin() {
    let c = ok(r#"
[[fetch.credentials]]
origin = "https://intranet.example:8443"
authorization = "Basic dXNlcjpwYXNz"

[[fetch.credentials]]
origin = "http://wiki.example"
cookie = "session=abc; theme=dark"
"#);
    let creds = &c.fetch.credentials;
    assert_eq!(creds.len(), 2);
    let url = |s: &str| url::Url::parse(s).unwrap();
    let a = creds
        .for_url(&url("https://intranet.example:8443/x"))
        .unwrap();
    assert_eq!(
        a.authorization.as_ref().map(Secret::expose),
        Some("Basic dXNlcjpwYXNz")
    );
    assert!(a.cookie.is_none());
    let b = creds.for_url(&url("http://wiki.example:80/p")).unwrap();
    assert_eq!(
        b.cookie.as_ref().map(Secret::expose),
        Some("session=abc; theme=dark")
    );
    assert!(creds.for_url(&url("https://wiki.example/p")).is_none());
    assert!(creds.for_url(&url("https://intranet.example/x")).is_none());
    let shown = format!("{c:?}");
    assert!(
        !shown.contains("dXNlcjpwYXNz") && !shown.contains("session=abc"),
        "{shown}"
    );
}

#[test]
fn each_problem_names_its_key_and_hides_the_value() {
    let m = messages(
        r#"
[[fetch.credentials]]
authorization = "Bearer s3cr3t-one"

[[fetch.credentials]]
origin = "https://user:s3cr3t-two@a.example"
authorization = "Bearer x"

[[fetch.credentials]]
origin = "https://b.example/login"
cookie = "a=1"

[[fetch.credentials]]
origin = "https://c.example"

[[fetch.credentials]]
origin = "https://d.example"
authorization = "Bearer s3cr3t-three\u0007"
cookie = ""

[[fetch.credentials]]
origin = "https://e.example"
cookie = "a=1"

[[fetch.credentials]]
origin = "https://E.example:443"
cookie = "b=2"

[[fetch.credentials]]
origin = "https://f.example"
cookie = "a=1"
password = "s3cr3t-four"
"#,
    );
    let all = m.join("\n");
    assert!(!all.contains("s3cr3t"), "{all}");
    let has = |needle: &str| {
        assert!(
            m.iter().any(|l| l.contains(needle)),
            "no `{needle}` in\n{all}"
        );
    };
    has("`fetch.credentials[0]`: missing required key `origin`");
    has(
        "`fetch.credentials[1].origin`: origin `https://***@a.example` must not hold a user name or password",
    );
    has(
        "`fetch.credentials[2].origin`: origin `https://b.example/login` must be only scheme, host and port",
    );
    has("`fetch.credentials[3].authorization`: needed unless `cookie` is given");
    has("`fetch.credentials[4].authorization`: must hold only visible ASCII");
    has("`fetch.credentials[4].cookie`: must not be empty");
    has(
        "`fetch.credentials[6].origin`: origin `https://e.example` is already given in `fetch.credentials[5]`",
    );
    has("unknown key `fetch.credentials[7].password`");
    assert_eq!(m.len(), 8, "{all}");
}

#[test]
fn a_bad_seed_is_reported_without_its_password() {
    let m = messages(
        "[crawl]\nseeds = [\"ftp://bob:s3cr3t@files.example/\", \"http://bob:s3cr3t@\"]\n",
    );
    let all = m.join("\n");
    assert!(!all.contains("s3cr3t"), "{all}");
    assert!(
        all.contains("URL `ftp://***@files.example/` must use http or https"),
        "{all}"
    );
}
