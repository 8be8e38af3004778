//! The client against a fake server on loopback (canned replies, one per connection), and the
//! cache's layout as libdebuginfod reads and writes it.

use std::collections::HashMap;
use std::io::{BufRead as _, BufReader};
use std::net::TcpListener;
use std::sync::Arc;

use super::*;

/// An ELF fixture with a build-id.
const ELF: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/recordings/root/tmp/hrec-fixture/work"
);
const ELF_ID: &str = "a797671d0d942571e3e6518aad52afe2bf957459";

fn id() -> Vec<u8> {
    (0..ELF_ID.len() / 2)
        .map(|i| u8::from_str_radix(&ELF_ID[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
    let map: HashMap<String, OsString> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), OsString::from(v)))
        .collect();
    move |k| map.get(k).cloned()
}

#[test]
fn settings_come_from_the_environment_as_libdebuginfod_reads_it() {
    assert_eq!(Config::from_vars(vars(&[("HOME", "/h")])), None);
    assert_eq!(
        Config::from_vars(vars(&[("DEBUGINFOD_URLS", "  "), ("HOME", "/h")])),
        None
    );
    let c = Config::from_vars(vars(&[
        ("DEBUGINFOD_URLS", " http://a:1  https://b/x/ http://a:1 "),
        ("HOME", "/nonexistent-home"),
    ]))
    .unwrap();
    assert_eq!(c.urls, ["http://a:1", "https://b/x/"]);
    assert_eq!(c.timeout, Some(DEFAULT_TIMEOUT));
    assert_eq!(
        c.cache,
        Path::new("/nonexistent-home/.cache/debuginfod_client")
    );
    assert_eq!((c.max_size, c.limit()), (None, MAX_FILE));
    let c = Config::from_vars(vars(&[
        ("DEBUGINFOD_URLS", "http://a"),
        ("HOME", "/nonexistent-home"),
        ("XDG_CACHE_HOME", "/xdg"),
        ("DEBUGINFOD_TIMEOUT", " 7s"),
        ("DEBUGINFOD_MAXSIZE", "1000"),
    ]))
    .unwrap();
    assert_eq!(c.cache, Path::new("/xdg/debuginfod_client"));
    assert_eq!(c.timeout, Some(Duration::from_secs(7)));
    assert_eq!((c.max_size, c.limit()), (Some(1000), 1000));
    let c = Config::from_vars(vars(&[
        ("DEBUGINFOD_URLS", "http://a"),
        ("DEBUGINFOD_CACHE_PATH", "/c"),
        ("XDG_CACHE_HOME", "/xdg"),
        ("DEBUGINFOD_TIMEOUT", "0"),
    ]))
    .unwrap();
    assert_eq!((c.cache.as_path(), c.timeout), (Path::new("/c"), None));
    // The deprecated ~/.debuginfod_client_cache, where it exists, before XDG.
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir(home.path().join(".debuginfod_client_cache")).unwrap();
    let c = Config::from_vars(vars(&[
        ("DEBUGINFOD_URLS", "http://a"),
        ("HOME", home.path().to_str().unwrap()),
        ("XDG_CACHE_HOME", "/xdg"),
    ]))
    .unwrap();
    assert_eq!(c.cache, home.path().join(".debuginfod_client_cache"));
}

#[test]
fn leading_numbers_read_as_atol_reads_them() {
    for (text, n) in [
        ("600", Some(600)),
        ("  42\n", Some(42)),
        ("-3x", Some(-3)),
        ("+9", Some(9)),
        ("", None),
        ("x1", None),
        ("-", None),
        ("99999999999999999999", None),
    ] {
        assert_eq!(leading_int(text.as_bytes()), n, "{text:?}");
    }
}

#[test]
fn negative_entries_stand_for_cache_miss_s_then_are_asked_again() {
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::new(dir.path().join("c"));
    assert_eq!(cache.cache_miss(), DEFAULT_CACHE_MISS);
    let id = id();
    assert_eq!(
        cache.lookup(&id, Kind::Debuginfo, DEFAULT_CACHE_MISS),
        Cached::Absent
    );
    cache.store_negative(&id, Kind::Debuginfo).unwrap();
    let entry = dir.path().join("c").join(ELF_ID).join("debuginfo");
    assert_eq!(std::fs::metadata(&entry).unwrap().len(), 0);
    assert_eq!(
        cache.lookup(&id, Kind::Debuginfo, DEFAULT_CACHE_MISS),
        Cached::KnownMissing
    );
    assert_eq!(
        cache.lookup(&id, Kind::Executable, DEFAULT_CACHE_MISS),
        Cached::Absent
    );
    // Older than cache_miss_s: asked again, and a new negative entry replaces it.
    let old = SystemTime::now() - Duration::from_secs(3600);
    File::options()
        .write(true)
        .open(&entry)
        .unwrap()
        .set_modified(old)
        .unwrap();
    assert_eq!(
        cache.lookup(&id, Kind::Debuginfo, DEFAULT_CACHE_MISS),
        Cached::Absent
    );
    cache.store_negative(&id, Kind::Debuginfo).unwrap();
    assert_eq!(
        cache.lookup(&id, Kind::Debuginfo, DEFAULT_CACHE_MISS),
        Cached::KnownMissing
    );
    std::fs::write(dir.path().join("c/cache_miss_s"), "5").unwrap();
    assert_eq!(cache.cache_miss(), Duration::from_secs(5));
    // A file that is not the one asked for is no hit.
    std::fs::write(&entry, b"not ELF").unwrap();
    assert_eq!(
        cache.lookup(&id, Kind::Debuginfo, DEFAULT_CACHE_MISS),
        Cached::Absent
    );
    std::fs::copy(ELF, &entry).unwrap();
    assert_eq!(
        cache.lookup(&id, Kind::Debuginfo, DEFAULT_CACHE_MISS),
        Cached::Hit(entry.clone())
    );
    let mut other = id.clone();
    other[0] ^= 1;
    let other_entry = cache.entry(&other, Kind::Debuginfo).unwrap();
    std::fs::create_dir_all(other_entry.parent().unwrap()).unwrap();
    std::fs::copy(ELF, &other_entry).unwrap();
    assert_eq!(
        cache.lookup(&other, Kind::Debuginfo, DEFAULT_CACHE_MISS),
        Cached::Absent
    );
}

/// A fake server: each connection gets the reply `reply(path)` (raw bytes) and is closed.
/// Returns its URL and the request paths it saw.
fn serve(reply: impl Fn(&str) -> Vec<u8> + Send + 'static) -> (String, Arc<Mutex<Vec<String>>>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for conn in l.incoming() {
            let Ok(mut conn) = conn else { continue };
            let mut r = BufReader::new(conn.try_clone().unwrap());
            let mut line = String::new();
            if r.read_line(&mut line).is_err() {
                continue;
            }
            loop {
                let mut h = String::new();
                if r.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
                    break;
                }
            }
            let path = line.split(' ').nth(1).unwrap_or("").to_string();
            log.lock().unwrap().push(path.clone());
            let _ = conn.write_all(&reply(&path));
        }
    });
    (url, seen)
}

fn ok(body: &[u8]) -> Vec<u8> {
    let mut r = format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    r.extend_from_slice(body);
    r
}

fn status(code: u16) -> Vec<u8> {
    format!("HTTP/1.1 {code} X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").into_bytes()
}

fn client(urls: &[&str], cache: &Path, timeout: u64) -> Debuginfod {
    Debuginfod::new(Config {
        urls: urls.iter().map(|u| u.to_string()).collect(),
        timeout: Some(Duration::from_secs(timeout)),
        cache: cache.to_path_buf(),
        max_size: None,
        max_redirects: 0,
    })
}

#[test]
fn fetched_files_land_in_libdebuginfods_layout_and_misses_leave_negative_entries() {
    let elf = std::fs::read(ELF).unwrap();
    let (url, seen) = serve(move |p| {
        if p.ends_with("/executable") {
            ok(&elf)
        } else {
            status(404)
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let d = client(&[&format!("{url}/")], &cache, 5);
    let id = id();
    let exe = d.find(&id, Kind::Executable).unwrap();
    assert_eq!(exe, cache.join(ELF_ID).join("executable"));
    assert_eq!(std::fs::read(&exe).unwrap(), std::fs::read(ELF).unwrap());
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&exe), 0o400);
    assert_eq!(mode(&cache.join(ELF_ID)), 0o700);
    assert_eq!(d.find(&id, Kind::Debuginfo), None);
    assert_eq!(
        std::fs::metadata(cache.join(ELF_ID).join("debuginfo"))
            .unwrap()
            .len(),
        0
    );
    // Each file once per client; a new client reads the cache, negative entry included.
    assert_eq!(d.find(&id, Kind::Debuginfo), None);
    let d2 = client(&[&url], &cache, 5);
    assert_eq!(d2.find(&id, Kind::Executable), Some(exe));
    assert_eq!(d2.find(&id, Kind::Debuginfo), None);
    assert_eq!(
        *seen.lock().unwrap(),
        [
            format!("/buildid/{ELF_ID}/executable"),
            format!("/buildid/{ELF_ID}/debuginfo"),
        ]
    );
    let s = d.summary();
    assert_eq!((s.servers[0].executables, s.servers[0].not_found), (1, 1));
    assert_eq!(d2.summary().known_missing, 1);
    // No temporary files left behind.
    let names: Vec<_> = std::fs::read_dir(cache.join(ELF_ID))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
}

#[test]
fn replies_that_are_not_the_file_are_refused_and_leave_no_entry() {
    let elf = std::fs::read(ELF).unwrap();
    let (url, _) = serve(move |p| {
        if p.contains("/buildid/00") {
            ok(&elf) // another build-id than asked for
        } else if p.ends_with("/executable") {
            ok(b"\x7fELF but not really")
        } else if p.ends_with("/debuginfo") {
            // More body than Content-Length says: only the declared bytes are read.
            let mut r = ok(b"short");
            r.extend_from_slice(&[0; 100]);
            r
        } else {
            status(500)
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let d = client(&[&url], dir.path(), 5);
    let mut other = id();
    other[0] = 0;
    assert_eq!(d.find(&other, Kind::Debuginfo), None);
    assert_eq!(d.find(&id(), Kind::Executable), None);
    assert_eq!(d.find(&id(), Kind::Debuginfo), None);
    let s = &d.summary().servers[0];
    assert_eq!(s.failed.0, 3, "{s:?}");
    assert!(s.failed.1.as_deref().unwrap().contains("build-id"), "{s:?}");
    assert!(s.unreachable.is_none());
    // Failures are not misses: nothing cached, no temporary files.
    assert!(
        std::fs::read_dir(dir.path().join(ELF_ID))
            .map(|d| d.count())
            .unwrap_or(0)
            == 0
    );
}

#[test]
fn sizes_are_bounded_before_and_while_reading() {
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::new(dir.path().to_path_buf());
    let id = id();
    // Declared too large: refused unread.
    let mut never = std::io::repeat(0);
    let r = store_reply(
        &cache,
        &id,
        Kind::Debuginfo,
        Some(1 << 40),
        &mut never,
        1000,
        None,
    );
    assert!(matches!(r, Err(StoreError::TooLarge(1000))), "{r:?}");
    // Declared nothing, sends more than the limit: stopped at the limit.
    let mut endless = std::io::repeat(7).take(5000);
    let r = store_reply(&cache, &id, Kind::Debuginfo, None, &mut endless, 1000, None);
    assert!(matches!(r, Err(StoreError::TooLarge(1000))), "{r:?}");
    // Exactly the file, within the limit: stored.
    let elf = std::fs::read(ELF).unwrap();
    let r = store_reply(
        &cache,
        &id,
        Kind::Debuginfo,
        Some(elf.len() as u64),
        &mut elf.as_slice(),
        elf.len() as u64,
        None,
    );
    assert_eq!(r.unwrap(), dir.path().join(ELF_ID).join("debuginfo"));
    assert_eq!(
        std::fs::read_dir(dir.path().join(ELF_ID)).unwrap().count(),
        1
    );
}

#[test]
fn an_unreachable_server_is_asked_once_and_a_silent_one_costs_the_timeout_once() {
    // A closed port: refused at once, then not asked again.
    let closed = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let dir = tempfile::tempdir().unwrap();
    let d = client(&[&closed], dir.path(), 5);
    let ids: Vec<Vec<u8>> = (1..=6u8).map(|i| vec![i; 20]).collect();
    d.fetch_all(&ids, |id| {
        d.find(id, Kind::Debuginfo);
    });
    let s = d.summary();
    assert_eq!(
        s.servers[0].unreachable.as_deref(),
        Some("connection refused")
    );
    assert_eq!(s.not_asked, 6);
    // Not a miss: no negative entries.
    assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());

    // Accepts connections and never answers: the first request waits out the timeout, the
    // others wait for it and are not sent.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", silent.local_addr().unwrap());
    let d = client(&[&url], dir.path(), 1);
    let progress = Arc::new(Mutex::new(Vec::new()));
    let p = progress.clone();
    d.set_progress(Some(Arc::new(move |done, total| {
        p.lock().unwrap().push((done, total))
    })));
    let start = Instant::now();
    d.fetch_all(&ids, |id| {
        d.find(id, Kind::Debuginfo);
    });
    let took = start.elapsed();
    assert!(
        took >= Duration::from_secs(1) && took < Duration::from_millis(1900),
        "{took:?}"
    );
    let s = d.summary();
    assert!(
        s.servers[0]
            .unreachable
            .as_deref()
            .unwrap()
            .contains("no answer within 1 s"),
        "{s:?}"
    );
    let progress = progress.lock().unwrap();
    assert_eq!(progress.first(), Some(&(0, 6)));
    assert_eq!(progress.iter().map(|p| p.0).max(), Some(6));
    drop(silent);
}

#[test]
fn a_later_server_is_asked_when_the_first_has_no_such_file() {
    let elf = std::fs::read(ELF).unwrap();
    let (none, _) = serve(|_| status(404));
    let (has, _) = serve(move |_| ok(&elf));
    let dir = tempfile::tempdir().unwrap();
    let d = client(&[&none, &has], dir.path(), 5);
    assert!(d.find(&id(), Kind::Debuginfo).is_some());
    let s = d.summary();
    assert_eq!(s.servers[0].not_found, 1);
    assert_eq!(s.servers[1].debuginfo, 1);
}
