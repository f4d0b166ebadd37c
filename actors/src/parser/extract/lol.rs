//! Link extraction with lol_html's streaming rewriter, fed the body in chunks with its output discarded. It reads
//! documents that declare a charset other than UTF-8 in a `<meta>` (lol_html decodes them from there on), and it
//! is the reference the tokenizer's results are tested against.

use std::borrow::Cow;
use std::cell::RefCell;

use super::collect::{Attrs, Collector, Kind};
use super::{CHUNK_SIZE, ExtractError, ExtractOptions, ExtractedPage, NOSCRIPT_PASSES};
use lol_html::html_content::{Element, TextChunk};
use lol_html::{ElementContentHandlers, HtmlRewriter, MemorySettings, Selector, Settings};
use url::Url;

/// Upper bound on lol_html's internal buffers (a single tag split across chunks is buffered).
const MAX_PARSER_MEMORY: usize = 64 * 1024 * 1024;

const LINK_SELECTOR: &str =
    "a[href], area[href], frame[src], iframe[src], link[href], base[href], meta, title";

const EMBED_SELECTOR: &str = "img, source, video, audio, track[src], script[src], embed[src], \
     object[data], input[src], [style]";

impl Attrs for Element<'_, '_> {
    fn get(&self, name: &str) -> Option<Cow<'_, str>> {
        self.get_attribute(name).map(Cow::Owned)
    }
}

/// Extracts from `html` with lol_html: the document, then the text of its `<noscript>` elements read as markup.
///
/// lol_html 3.0.3 meets internal inconsistencies on some markup (`<style a=><a </a>`, found by the extract_links
/// fuzz target): release builds return its internal error, builds with debug assertions panic in a `debug_assert!`.
/// The panic is caught here so that every build reports the same [`ExtractError::Html`].
pub(super) fn extract(
    html: &[u8],
    page_url: &Url,
    opts: &ExtractOptions<'_>,
) -> Result<ExtractedPage, ExtractError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        extract_unguarded(html, page_url, opts)
    }))
    .unwrap_or_else(|_| Err(ExtractError::Html("lol_html internal error".into())))
}

fn extract_unguarded(
    html: &[u8],
    page_url: &Url,
    opts: &ExtractOptions<'_>,
) -> Result<ExtractedPage, ExtractError> {
    let collector = RefCell::new(Collector::new(opts));
    run_pass(&collector, html, opts, true)?;
    for _ in 0..NOSCRIPT_PASSES {
        let noscript = collector.borrow_mut().take_noscript();
        if noscript.is_empty() {
            break;
        }
        run_pass(&collector, noscript.as_bytes(), opts, false)?;
    }
    Ok(collector.into_inner().finish(page_url))
}

fn selector(s: &str) -> Result<Selector, ExtractError> {
    s.parse()
        .map_err(|e: lol_html::errors::SelectorError| ExtractError::Html(e.to_string()))
}

/// One read of `html` (the document, or the text of its `<noscript>` elements read as markup).
fn run_pass(
    collector: &RefCell<Collector>,
    html: &[u8],
    opts: &ExtractOptions<'_>,
    charset_from_meta: bool,
) -> Result<(), ExtractError> {
    let on_element = |el: &mut Element<'_, '_>| {
        let kind = Kind::of(&el.tag_name());
        collector.borrow_mut().element(kind, el, opts.agent_token);
        Ok(())
    };
    let on_embed = |el: &mut Element<'_, '_>| {
        let kind = Kind::of(&el.tag_name());
        collector.borrow_mut().embed_element(kind, el);
        Ok(())
    };
    let on_foreign_title = |_: &mut Element<'_, '_>| {
        collector.borrow_mut().foreign_title();
        Ok(())
    };
    let on_title = |t: &mut TextChunk<'_>| {
        collector
            .borrow_mut()
            .title_text(t.as_str(), t.last_in_text_node());
        Ok(())
    };
    let on_noscript = |t: &mut TextChunk<'_>| {
        collector
            .borrow_mut()
            .noscript_text(t.as_str(), t.last_in_text_node());
        Ok(())
    };
    let on_style = |t: &mut TextChunk<'_>| {
        collector
            .borrow_mut()
            .style_text(t.as_str(), t.last_in_text_node());
        Ok(())
    };
    let mut settings = Settings::new()
        .with_strict(false)
        .with_adjust_charset_on_meta_tag(charset_from_meta)
        .with_memory_settings(
            MemorySettings::new().with_max_allowed_memory_usage(MAX_PARSER_MEMORY),
        )
        // Before the main handler, which then knows that this title is not the document's.
        .append_element_content_handler((
            Cow::Owned(selector("svg title, math title")?),
            ElementContentHandlers::default().element(on_foreign_title),
        ))
        .append_element_content_handler((
            Cow::Owned(selector(LINK_SELECTOR)?),
            ElementContentHandlers::default().element(on_element),
        ))
        .append_element_content_handler((
            Cow::Owned(selector("title")?),
            ElementContentHandlers::default().text(on_title),
        ))
        .append_element_content_handler((
            Cow::Owned(selector("noscript")?),
            ElementContentHandlers::default().text(on_noscript),
        ));
    if opts.embeds {
        settings = settings
            .append_element_content_handler((
                Cow::Owned(selector(EMBED_SELECTOR)?),
                ElementContentHandlers::default().element(on_embed),
            ))
            .append_element_content_handler((
                Cow::Owned(selector("style")?),
                ElementContentHandlers::default().text(on_style),
            ));
    }
    let mut rewriter = HtmlRewriter::new(settings, |_: &[u8]| {});
    for chunk in html.chunks(CHUNK_SIZE) {
        rewriter
            .write(chunk)
            .map_err(|e| ExtractError::Html(e.to_string()))?;
    }
    rewriter
        .end()
        .map_err(|e| ExtractError::Html(e.to_string()))
}
