//! `hrec flamegraph` on real recordings made here: the SVG is well-formed XML, its frames'
//! counts and widths agree with `hrec report` on the same file, it renders in headless
//! Chromium where search and click-to-zoom work (plain, differential; the retire-latency
//! weighted one in `report_synthetic.rs`), and differential graphs of two recordings draw.

mod support;

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use quick_xml::Reader;
use quick_xml::events::Event;
use support::browser::{
    attr, chromium, dom_after_scripts, frame_tags, matched_percent, unzoom_button, zoom_by_click,
};
use support::{hrec_in, text};

/// In a real browser (headless Chromium), the flame graph's search highlights the matching
/// frames and says how much they cover, as much as the report's Children column for the
/// function; a click on a frame zooms into it (it takes the full width, frames outside its
/// subtree are hidden, the reset button shows).
#[test]
fn svg_search_and_click_to_zoom_in_a_browser() {
    let Some(chromium) = chromium() else {
        eprintln!("skipped: no chromium (scripts/test installs Debian's when it can)");
        return;
    };
    let r = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recordings");
    let (file, symfs) = (r.join("callchain.hrec"), r.join("root"));
    let (file, symfs) = (file.to_str().unwrap(), symfs.to_str().unwrap());
    let dir = tempfile::tempdir().unwrap();
    let o = hrec_in(
        dir.path(),
        &["flamegraph", "-i", file, "--symfs", symfs, "-o", "fg.svg"],
    );
    assert!(o.status.success(), "{}", text(&o).1);
    let svg_path = dir.path().join("fg.svg");
    let svg = std::fs::read_to_string(&svg_path).unwrap();

    // Search (inferno keeps it in the URL, as its Search button does): every `hot` frame
    // turns the search colour, no other frame does, and the matched share is hot's Children.
    let dom = dom_after_scripts(chromium, &format!("file://{}?s=hot", svg_path.display()));
    let hot = frame_tags(&dom, "hot");
    assert!(hot.len() >= 2, "{dom}");
    assert!(
        hot.iter().all(|(r, _)| attr(r, "fill") == "rgb(230,0,230)"),
        "{hot:?}"
    );
    for other in ["warm", "main", "worker"] {
        let f = frame_tags(&dom, other);
        assert!(!f.is_empty(), "{other}");
        assert!(
            f.iter().all(|(r, _)| attr(r, "fill") != "rgb(230,0,230)"),
            "{f:?}"
        );
    }
    let matched = matched_percent(&dom);
    let o = hrec_in(
        dir.path(),
        &[
            "report", "--stdio", "-i", file, "--symfs", symfs, "--sort", "sym",
        ],
    );
    let report = text(&o).0;
    let children: f64 = report
        .lines()
        .find(|l| l.ends_with("[.] hot"))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|p| p.trim_end_matches('%').parse().ok())
        .unwrap_or_else(|| panic!("{report}"));
    assert!(
        (matched - children).abs() < 0.06,
        "{matched} vs {children}\n{report}"
    );

    // Click-to-zoom: a real click event on `worker`'s frame, through the SVG's own handler.
    let dom = zoom_by_click(chromium, &svg, "worker (", dir.path());
    let worker = frame_tags(&dom, "worker");
    assert_eq!(worker.len(), 1, "{worker:?}");
    let (rect, class) = worker[0];
    assert!(!class.contains("hide"), "{class}");
    let width: f64 = attr(rect, "width").trim_end_matches('%').parse().unwrap();
    assert!(width > 99.0, "the zoomed frame is not full width: {rect}");
    // main's subtree is outside worker's: hidden; worker's callees stay.
    assert!(
        frame_tags(&dom, "main")
            .iter()
            .all(|(_, c)| c.contains("hide")),
        "{dom}"
    );
    assert!(
        frame_tags(&dom, "warm")
            .iter()
            .any(|(_, c)| !c.contains("hide")),
        "{dom}"
    );
    let unzoom = unzoom_button(&dom);
    assert!(
        !unzoom.contains("hide"),
        "the reset-zoom button is hidden: {unzoom}"
    );
}

/// Every `<g>` frame of an inferno SVG: its title text and its rect's width in pixels.
fn frames(svg: &str) -> Vec<(String, f64)> {
    let mut r = Reader::from_str(svg);
    let mut out = Vec::new();
    let mut in_title = false;
    let mut title = String::new();
    loop {
        match r.read_event().expect("well-formed XML") {
            Event::Eof => break,
            Event::Start(e) if e.name().as_ref() == b"title" => {
                in_title = true;
                title.clear();
            }
            Event::Text(t) if in_title => title.push_str(&t.decode().unwrap()),
            Event::GeneralRef(g) if in_title => {
                let name = String::from_utf8_lossy(&g).to_string();
                title.push_str(match name.as_str() {
                    "lt" => "<",
                    "gt" => ">",
                    "amp" => "&",
                    "quot" => "\"",
                    "apos" => "'",
                    _ => "?",
                });
            }
            Event::End(e) if e.name().as_ref() == b"title" => in_title = false,
            Event::Empty(e) if e.name().as_ref() == b"rect" && !title.is_empty() => {
                let w = e
                    .attributes()
                    .flatten()
                    .find(|a| a.key.as_ref() == b"width")
                    .map(|a| {
                        String::from_utf8_lossy(&a.value)
                            .trim_end_matches('%')
                            .parse::<f64>()
                            .unwrap()
                    });
                if let Some(w) = w {
                    out.push((std::mem::take(&mut title), w));
                }
            }
            _ => {}
        }
    }
    out
}

/// `name (1,234 samples, 56.78%)` → (name, 1234, 56.78).
fn parse_title(t: &str) -> Option<(String, u64, f64)> {
    let open = t.rfind(" (")?;
    let inner = t[open + 2..].strip_suffix(')')?;
    let (count, pct) = inner.split_once(", ")?;
    let n = count.split(' ').next()?.replace(',', "").parse().ok()?;
    let p = pct.strip_suffix('%')?.parse().ok()?;
    Some((t[..open].to_string(), n, p))
}

fn record(dir: &Path, scale: &str) {
    let bin = support::release_example("hotspots");
    let o = hrec_in(
        dir,
        &["record", "-F", "4000", "--", bin.to_str().unwrap(), scale],
    );
    assert!(o.status.success(), "{}", text(&o).1);
}

#[test]
fn svg_is_valid_and_frame_widths_follow_the_report() {
    let dir = tempfile::tempdir().unwrap();
    record(dir.path(), "2");
    let o = hrec_in(dir.path(), &["flamegraph", "-o", "fg.svg"]);
    assert!(o.status.success(), "{}", text(&o).1);
    let svg = std::fs::read_to_string(dir.path().join("fg.svg")).unwrap();
    let f = frames(&svg);
    let all = f
        .iter()
        .find(|(t, _)| t.starts_with("all ("))
        .expect("root frame");
    let (_, total, _) = parse_title(&all.0).unwrap();
    let full_width = all.1;

    // The report's rows with the same key (comm;dso;sym is the stack without callchains).
    let o = hrec_in(dir.path(), &["report", "--json", "--sort", "comm,dso,sym"]);
    let j: serde_json::Value = serde_json::from_str(&text(&o).0).unwrap();
    assert_eq!(j["events"][0]["samples"].as_u64(), Some(total));
    let mut report: HashMap<String, u64> = HashMap::new();
    for r in j["events"][0]["rows"].as_array().unwrap() {
        if r["key"]["comm"] == "hotspots" && r["key"]["dso"] == "hotspots" {
            let sym = r["key"]["sym"].as_str().unwrap().trim_start_matches("[.] ");
            report.insert(sym.to_string(), r["samples"].as_u64().unwrap());
        }
    }
    let mut checked = 0;
    for (title, width) in &f {
        let Some((name, n, pct)) = parse_title(title) else {
            continue;
        };
        let Some(&want) = report.get(&name) else {
            continue;
        };
        // Exact counts; widths proportional to them (inferno rounds to 0.01 px / 0.01%).
        assert_eq!(n, want, "{name}");
        assert!(
            (pct - 100.0 * n as f64 / total as f64).abs() < 0.01,
            "{title}"
        );
        assert!(
            (width / full_width - n as f64 / total as f64).abs() < 0.001,
            "{title} {width}"
        );
        checked += 1;
    }
    assert!(
        report.contains_key("hotspots::hot_multiply") && checked >= 2,
        "{report:?}"
    );
    assert!(svg.contains("no callchains in the recording (record with -g)"));

    // Headless Chromium renders it: the screenshot is not blank.
    let Some(chromium) = chromium() else {
        eprintln!(
            "skipped the rendering check: no chromium (scripts/test installs Debian's when it can)"
        );
        return;
    };
    let png = dir.path().join("shot.png");
    let o = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
        ])
        .arg(format!("--screenshot={}", png.display()))
        .arg("--window-size=1200,600")
        .arg(format!("file://{}", dir.path().join("fg.svg").display()))
        .output()
        .unwrap();
    assert!(png.exists(), "{}", String::from_utf8_lossy(&o.stderr));
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&png).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let px = info.color_type.samples();
    let pixels: Vec<&[u8]> = buf[..info.buffer_size()].chunks(px).collect();
    let distinct: std::collections::HashSet<&[u8]> = pixels.iter().copied().collect();
    // A flame graph has many colours; a blank page one or two.
    assert!(distinct.len() > 50, "{} distinct colours", distinct.len());
    // The frames are warm colours (inferno's hot palette): red dominates blue somewhere.
    let warm = pixels.iter().filter(|p| p[0] > 200 && p[2] < 100).count();
    assert!(warm > 1000, "{warm} warm pixels");
}

#[test]
fn differential_and_folded_outputs() {
    let dir = tempfile::tempdir().unwrap();
    record(dir.path(), "1");
    std::fs::rename(dir.path().join("hrec.data"), dir.path().join("base.hrec")).unwrap();
    record(dir.path(), "2");
    let o = hrec_in(
        dir.path(),
        &[
            "flamegraph",
            "--diff",
            "base.hrec",
            "hrec.data",
            "-o",
            "diff.svg",
        ],
    );
    assert!(o.status.success(), "{}", text(&o).1);
    let svg = std::fs::read_to_string(dir.path().join("diff.svg")).unwrap();
    assert!(!frames(&svg).is_empty());
    assert!(svg.contains("red = grew vs BASE"), "subtitle");
    // In a real browser the differential graph searches and zooms as the plain one does.
    if let Some(chromium) = chromium() {
        let url = format!("file://{}?s=hot_", dir.path().join("diff.svg").display());
        let dom = dom_after_scripts(chromium, &url);
        let matched = matched_percent(&dom);
        assert!(matched > 50.0 && matched <= 100.0, "{matched}");
        let dom = zoom_by_click(chromium, &svg, "hotspots::hot_multiply", dir.path());
        assert!(!unzoom_button(&dom).contains("hide"), "no zoom");
    } else {
        eprintln!("skipped the browser check: no chromium");
    }

    // --folded to stdout: `stack count` lines whose counts add up to the samples.
    let o = hrec_in(dir.path(), &["flamegraph", "--folded"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let sum: u64 = out
        .lines()
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum();
    let o = hrec_in(dir.path(), &["report", "--json"]);
    let j: serde_json::Value = serde_json::from_str(&text(&o).0).unwrap();
    assert_eq!(Some(sum), j["events"][0]["samples"].as_u64());
    assert!(out.lines().all(|l| l.starts_with("hotspots;")), "{out}");
}

#[test]
fn script_collapsed_by_inferno_equals_report_folded() {
    use inferno::collapse::Collapse;
    let bin = support::release_example("hotspots");
    let dir = tempfile::tempdir().unwrap();
    let o = hrec_in(
        dir.path(),
        &[
            "record",
            "-g",
            "-F",
            "4000",
            "--",
            bin.to_str().unwrap(),
            "1",
        ],
    );
    assert!(o.status.success(), "{}", text(&o).1);
    // Without the period field the collapser counts samples, like report --folded; with
    // `--inline` script lists inlined functions as the folded stacks do.
    let o = hrec_in(
        dir.path(),
        &[
            "script",
            "--inline",
            "-F",
            "comm,tid,time,event,ip,sym,symoff,dso",
        ],
    );
    let (script, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let mut folder =
        inferno::collapse::perf::Folder::from(inferno::collapse::perf::Options::default());
    let mut collapsed = Vec::new();
    folder.collapse(script.as_bytes(), &mut collapsed).unwrap();
    let collapsed = String::from_utf8(collapsed).unwrap();
    let o = hrec_in(dir.path(), &["report", "--folded"]);
    let (folded, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let sorted = |s: &str| {
        let mut v: Vec<String> = s.lines().map(String::from).collect();
        v.sort();
        v
    };
    // Unresolved frames: perf's `[unknown]` in script (which inferno's collapser names after
    // the file, `[libc.so.6]`), labelled `[dso: reason]` when folded; both become `[unknown]`.
    let unlabelled = |text: &str| -> String {
        text.lines()
            .map(|l| {
                let (stack, n) = l.rsplit_once(' ').unwrap();
                let frames: Vec<&str> = stack
                    .split(';')
                    .map(|f| {
                        if f.starts_with('[') && f.ends_with(']') {
                            "[unknown]"
                        } else {
                            f
                        }
                    })
                    .collect();
                format!("{} {n}\n", frames.join(";"))
            })
            .collect()
    };
    let (a, b) = (
        sorted(&unlabelled(&collapsed)),
        sorted(&unlabelled(&folded)),
    );
    assert!(a.len() > 3, "{collapsed}");
    assert_eq!(a, b);
    // Inline frames are their own frames in both.
    assert!(
        folded.contains("hotspots::hot_multiply;hotspots::mix"),
        "{folded}"
    );
}
