//! A real browser for the flame graph tests: headless Chromium loads an SVG, runs its
//! scripts (inferno's search from the URL, a dispatched click) and gives back the document.

use std::path::Path;
use std::process::Command;

/// Debian's headless Chromium (or another Chrome) when installed.
pub fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|c| {
            Command::new(c)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
}

/// The document Chromium has after loading `url` and running its scripts (timers included).
pub fn dom_after_scripts(chromium: &str, url: &str) -> String {
    let o = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--virtual-time-budget=5000",
            "--dump-dom",
        ])
        .arg(url)
        .output()
        .expect("run chromium");
    let dom = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        dom.contains("<svg"),
        "chromium gave no document: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    dom
}

/// The `<rect ...>` tag of every frame whose title starts with `name (`, with its `<g>`'s
/// class.
pub fn frame_tags<'a>(svg: &'a str, name: &str) -> Vec<(&'a str, &'a str)> {
    let title = format!("<title>{name} (");
    let mut out = Vec::new();
    let mut rest = svg;
    while let Some(i) = rest.find(&title) {
        let before = &rest[..i];
        let g = before.rfind("<g").map_or("", |j| &before[j..]);
        let class = g
            .split("class=\"")
            .nth(1)
            .and_then(|c| c.split('"').next())
            .unwrap_or("");
        let after = &rest[i..];
        let rect = after
            .find("<rect")
            .and_then(|a| after[a..].find('>').map(|b| &after[a..a + b]))
            .unwrap_or("");
        out.push((rect, class));
        rest = &rest[i + title.len()..];
    }
    out
}

/// An attribute's value in a tag.
pub fn attr<'a>(tag: &'a str, name: &str) -> &'a str {
    tag.split(&format!(" {name}=\""))
        .nth(1)
        .and_then(|v| v.split('"').next())
        .unwrap_or("")
}

/// The share the search says it matched (`Matched: 66.9%`).
pub fn matched_percent(dom: &str) -> f64 {
    dom.split(">Matched: ")
        .nth(1)
        .and_then(|m| m.split('%').next())
        .and_then(|m| m.parse().ok())
        .unwrap_or_else(|| panic!("no Matched: line\n{dom}"))
}

/// The document after a real click on the first frame whose title starts with `title`,
/// through the SVG's own click handler (a copy of `svg` with a script that dispatches it,
/// written into `dir`).
pub fn zoom_by_click(chromium: &str, svg: &str, title: &str, dir: &Path) -> String {
    let click = format!(
        r#"<script type="text/ecmascript"><![CDATA[
window.addEventListener("load", function() {{ setTimeout(function() {{
    var t = Array.from(document.getElementsByTagName("title"))
        .find(function(t) {{ return t.textContent.indexOf("{title}") == 0; }});
    t.parentNode.querySelector("rect").dispatchEvent(new MouseEvent("click", {{bubbles: true}}));
}}, 100); }});
]]></script></svg>"#
    );
    let clicked = svg
        .trim_end()
        .strip_suffix("</svg>")
        .expect("an SVG document")
        .to_string()
        + &click;
    let path = dir.join("clicked.svg");
    std::fs::write(&path, clicked).expect("write the SVG");
    dom_after_scripts(chromium, &format!("file://{}", path.display()))
}

/// The tag of the reset-zoom button (`class="hide"` while nothing is zoomed).
pub fn unzoom_button(dom: &str) -> &str {
    dom.split("id=\"unzoom\"")
        .next()
        .and_then(|b| b.rsplit('<').next())
        .unwrap_or("")
}
