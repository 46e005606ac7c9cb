//! A branch's tip: fetched over smart HTTP(S) into the source's bare cache, or read from a
//! repository on this machine in place (gix's `file://` transport would start `git upload-pack`).

use std::num::NonZeroU32;
use std::path::Path;
use std::sync::atomic::AtomicBool;

use gix::bstr::ByteSlice;
use gix::remote::Direction;

use super::SyncError;

/// How long a fetch may wait for the server to send anything (per read, so a slow, steady
/// fetch of a large repository is not cut off).
const STALL: std::time::Duration = std::time::Duration::from_secs(60);

/// Opens (or makes) the bare cache at `path`. Isolated: no system or user configuration, no
/// `git` program, no helpers.
pub fn cache(path: &Path) -> Result<gix::Repository, SyncError> {
    let options = gix::open::Options::isolated();
    let opened = if path.join("HEAD").is_file() {
        gix::open_opts(path, options)
    } else {
        gix::ThreadSafeRepository::init_opts(path, gix::create::Kind::Bare, gix::create::Options::default(), options)
            .map(|r| r.to_thread_local())
    };
    opened.map_err(|e| SyncError::Disk(format!("cannot open the cache {}: {e}", path.display())))
}

/// The tip of `branch` in the repository at `path` on this machine, and that repository.
pub fn local(path: &Path, branch: &str) -> Result<(gix::Repository, gix::ObjectId), SyncError> {
    let repo = gix::open_opts(path, gix::open::Options::isolated())
        .map_err(|e| SyncError::Fetch(format!("cannot open the repository {}: {e}", path.display())))?;
    let name = format!("refs/heads/{branch}");
    let commit = match repo.try_find_reference(name.as_str()) {
        Err(e) => return Err(SyncError::Fetch(format!("{}: cannot read {name}: {e}", path.display()))),
        Ok(None) => {
            return Err(SyncError::BranchGone { branch: branch.to_string(), remote: path.display().to_string() });
        }
        Ok(Some(mut reference)) => reference
            .peel_to_id()
            .map(|id| id.detach())
            .map_err(|e| SyncError::Fetch(format!("{}: {name} leads nowhere: {e}", path.display())))?,
    };
    Ok((repo, commit))
}

/// Fetches `branch` of `url` into `repo` (a shallow fetch: only the tip's objects; `+`, so a
/// force-push is taken) and gives its tip. The token is sent only when the server asks, and only
/// over HTTPS (gix refuses plain HTTP for credentials).
pub fn fetch(
    repo: &gix::Repository,
    url: &str,
    branch: &str,
    credentials: Option<(String, String)>,
    stop: &AtomicBool,
) -> Result<gix::ObjectId, SyncError> {
    // gix builds its reqwest client itself; with rustls and no provider of its own, one must be set.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let failed = |e: gix::Error| {
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            SyncError::Stopped
        } else {
            SyncError::Fetch(format!("cannot fetch {branch} from {url}: {}", described(&e)))
        }
    };
    let tracking = format!("refs/remotes/origin/{branch}");
    let spec = format!("+refs/heads/{branch}:{tracking}");
    let remote = repo
        .remote_at(url)
        .map_err(|e| SyncError::Fetch(format!("{url}: {e}")))?
        .with_fetch_tags(gix::remote::fetch::Tags::None)
        .with_refspecs([spec.as_str()], Direction::Fetch)
        .map_err(|e| SyncError::Fetch(format!("{url}: {e}")))?;
    let connection = remote.connect(Direction::Fetch).map_err(failed)?;
    // The token goes only to the configured host and port, not to one a redirect leads to.
    let origin = |url: &str| {
        reqwest::Url::parse(url).ok().and_then(|u| Some((u.host_str()?.to_string(), u.port_or_known_default()?)))
    };
    let configured = origin(url);
    let connection = connection.with_credentials(move |action| match (action, &credentials) {
        (gix::credentials::helper::Action::Get(context), Some((username, token)))
            if configured.is_some() && context.url.as_ref().and_then(|u| origin(&u.to_string())) == configured =>
        {
            Ok(Some(gix::credentials::protocol::Outcome {
                credentials: gix::sec::identity::Credentials::UsernamePassword {
                    username: username.clone(),
                    password: token.clone(),
                    oauth_refresh_token: None,
                },
                next: context.into(),
            }))
        }
        _ => Ok(None),
    });
    use gix::protocol::transport::client::blocking_io::http;
    let backend = http::reqwest::Options {
        configure_client: Some(Box::new(|builder: reqwest::blocking::ClientBuilder| {
            Ok(builder.timeout(STALL).user_agent(concat!("docs-agent/", env!("CARGO_PKG_VERSION"))))
        })),
        configure_request: None,
    };
    let connection = connection.with_transport_options(Box::new(http::Options {
        backend: Some(std::sync::Arc::new(std::sync::Mutex::new(backend))),
        connect_timeout: Some(std::time::Duration::from_secs(20)),
        ..Default::default()
    }));
    let prepare = connection
        .prepare_fetch(gix::progress::Discard, Default::default())
        .map_err(failed)?
        .with_shallow(gix::remote::fetch::Shallow::DepthAtRemote(NonZeroU32::MIN));
    let wanted = format!("refs/heads/{branch}");
    let present = prepare.ref_map().mappings.iter().any(|m| match &m.remote {
        gix::protocol::fetch::refmap::Source::Ref(r) => r.unpack().0.as_bytes() == wanted.as_bytes(),
        gix::protocol::fetch::refmap::Source::ObjectId(_) => false,
    });
    if !present {
        return Err(SyncError::BranchGone { branch: branch.to_string(), remote: url.to_string() });
    }
    prepare.receive(gix::progress::Discard, stop).map_err(failed)?;
    let mut reference = repo.find_reference(tracking.as_str()).map_err(|e| SyncError::Fetch(format!("{url}: {e}")))?;
    Ok(reference.peel_to_id().map_err(|e| SyncError::Fetch(format!("{url}: {e}")))?.detach())
}

/// A fetch's failure in words a person can act on, with gix's own message after them.
fn described(e: &gix::Error) -> String {
    use gix::error::Class;
    let hint = match e.dominant_class() {
        Some(Class::Retryable) => "the server could not be reached (it is tried again at the next sync)",
        Some(Class::Unauthenticated) => {
            "the server refused the credentials: check token_file or token_env and username"
        }
        Some(Class::NotFound) => "not found",
        _ => "",
    };
    let message = e.to_string();
    let hint = if message.contains("status 404") { "no such repository on the server (HTTP 404)" } else { hint };
    match hint {
        "" => message,
        hint => format!("{hint}: {message}"),
    }
}
