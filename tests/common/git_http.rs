//! A git smart-HTTP server on 127.0.0.1 for tests: each request is handed to git's own CGI
//! program, `git-http-backend`, over a repository folder, as a web server would. Protocol v2,
//! bodies by length or chunked (gix sends large negotiations chunked), gzip passed through, and
//! an optional Basic-auth check that answers 401 as a forge does.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// A running server; it stops serving when dropped (new connections are closed at once).
pub struct GitHttp {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    down: Arc<AtomicBool>,
    /// How many requests were answered 401.
    pub refused: Arc<AtomicUsize>,
}

impl Drop for GitHttp {
    fn drop(&mut self) {
        self.down.store(true, Ordering::SeqCst);
    }
}

/// Runs the `git` program in `dir`, isolated from the machine's and the user's configuration, as
/// a test's or a bench's setup does (docs-agent itself never runs it); its stdout, trimmed.
pub fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new("git")
        .args(["-c", "init.defaultBranch=main", "-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(["-c", "advice.detachedHead=false"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .map_err(|e| format!("git: {e}"))?;
    if !out.status.success() {
        return Err(format!("git {args:?}: {}", String::from_utf8_lossy(&out.stderr)));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// `git-http-backend`, found beside the `git` program the tests use.
pub fn backend() -> Option<PathBuf> {
    let out = Command::new("git").arg("--exec-path").output().ok()?;
    let exec = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    [exec.join("git-http-backend"), PathBuf::from("/usr/lib/git-core/git-http-backend")]
        .into_iter()
        .find(|p| p.is_file())
}

impl GitHttp {
    /// Serves the repositories under `root` (`/NAME.git` is `root/NAME.git`); with `basic`, every
    /// request must carry `Authorization: Basic BASIC`.
    pub fn start(root: &Path, basic: Option<&str>) -> GitHttp {
        let backend = backend().expect("git-http-backend (Debian's git)");
        let listener = TcpListener::bind("127.0.0.1:0").expect("a port");
        let base = format!("http://{}", listener.local_addr().expect("an address"));
        let down = Arc::new(AtomicBool::new(false));
        let refused = Arc::new(AtomicUsize::new(0));
        let (root, basic) = (root.to_path_buf(), basic.map(str::to_string));
        let (stop, count) = (down.clone(), refused.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                if stop.load(Ordering::SeqCst) {
                    drop(stream);
                    continue;
                }
                let (root, backend, basic, count) = (root.clone(), backend.clone(), basic.clone(), count.clone());
                std::thread::spawn(move || {
                    let _ = serve(stream, &root, &backend, basic.as_deref(), &count);
                });
            }
        });
        GitHttp { base, down, refused }
    }

    /// Stops answering: every new connection is closed before a byte is read.
    pub fn go_down(&self) {
        self.down.store(true, Ordering::SeqCst);
    }
}

fn serve(
    stream: TcpStream,
    root: &Path,
    backend: &Path,
    basic: Option<&str>,
    refused: &AtomicUsize,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut writer = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let mut parts = line.split_whitespace();
        let (method, target) = (parts.next().unwrap_or("").to_string(), parts.next().unwrap_or("").to_string());
        let mut headers = Vec::new();
        loop {
            let mut header = String::new();
            reader.read_line(&mut header)?;
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
            }
        }
        let header = |name: &str| headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
        let body = if header("transfer-encoding").is_some_and(|t| t.eq_ignore_ascii_case("chunked")) {
            chunked(&mut reader)?
        } else {
            let mut body = vec![0; header("content-length").and_then(|l| l.parse().ok()).unwrap_or(0)];
            reader.read_exact(&mut body)?;
            body
        };
        if let Some(expected) = basic
            && header("authorization").as_deref() != Some(&format!("Basic {expected}"))
        {
            refused.fetch_add(1, Ordering::SeqCst);
            writer.write_all(
                b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"git\"\r\nContent-Length: 0\r\n\r\n",
            )?;
            continue;
        }
        let (path, query) = target.split_once('?').unwrap_or((&target, ""));
        let mut cgi = Command::new(backend)
            .env_clear()
            .env("GIT_PROJECT_ROOT", root)
            .env("GIT_HTTP_EXPORT_ALL", "1")
            .env("REQUEST_METHOD", &method)
            .env("PATH_INFO", path)
            .env("QUERY_STRING", query)
            .env("CONTENT_TYPE", header("content-type").unwrap_or_default())
            .env("CONTENT_LENGTH", body.len().to_string())
            .env("REMOTE_ADDR", "127.0.0.1")
            .env("GIT_PROTOCOL", header("git-protocol").unwrap_or_default())
            .env("HTTP_CONTENT_ENCODING", header("content-encoding").unwrap_or_default())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let mut stdin = cgi.stdin.take().expect("stdin");
        let feeder = std::thread::spawn(move || stdin.write_all(&body));
        let out = cgi.wait_with_output()?;
        let _ = feeder.join();
        let split = out
            .stdout
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .map(|at| (at, 4))
            .or_else(|| out.stdout.windows(2).position(|w| w == b"\n\n").map(|at| (at, 2)));
        let Some((at, gap)) = split else {
            writer.write_all(b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n")?;
            continue;
        };
        let (head, content) = (String::from_utf8_lossy(&out.stdout[..at]).to_string(), &out.stdout[at + gap..]);
        let mut status = "200 OK".to_string();
        let mut response = String::new();
        for line in head.lines() {
            match line.split_once(':') {
                Some((name, value)) if name.eq_ignore_ascii_case("status") => status = value.trim().to_string(),
                Some(_) => response.push_str(&format!("{line}\r\n")),
                None => {}
            }
        }
        writer.write_all(
            format!("HTTP/1.1 {status}\r\n{response}Content-Length: {}\r\n\r\n", content.len()).as_bytes(),
        )?;
        writer.write_all(content)?;
    }
}

fn chunked(reader: &mut impl BufRead) -> std::io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let mut size = String::new();
        reader.read_line(&mut size)?;
        let size = usize::from_str_radix(size.trim().split(';').next().unwrap_or("0"), 16)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
        let mut chunk = vec![0; size + 2];
        reader.read_exact(&mut chunk)?;
        if size == 0 {
            return Ok(body);
        }
        body.extend_from_slice(&chunk[..size]);
    }
}
