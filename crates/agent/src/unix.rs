//! Unix-domain listeners (`punix:PATH`): the local control socket.
//!
//! ## What
//! [`bind`] creates the socket file fresh, with mode 0660 (owner and group
//! may connect), and returns it with a [`SocketFile`] that removes the file
//! when the listener is dropped (a clean shutdown), but only while the path
//! still names the socket this process created.
//!
//! ## A socket file that is already there
//! A switch that was killed leaves its socket file behind. If `bind` finds
//! the path taken, it connects to it: refused means nobody listens (the
//! file is stale), so it is removed and the bind tried once more; a
//! connection means another process serves that path, which is
//! [`BindError::InUse`] (the file is left alone). A path that exists but is
//! not a socket is never removed.
//!
//! ## Mode
//! The file is created with the process's umask and set to 0660 right
//! after `bind` (before anything is accepted). Creating it first keeps the
//! bind exclusive: a rename of a prepared file would replace a live socket.

use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

/// Mode of the socket file: the owner and its group may connect.
pub const SOCKET_MODE: u32 = 0o660;

/// Why a unix socket could not be bound.
#[derive(Debug)]
pub enum BindError {
    /// Another process accepts connections on the path.
    InUse,
    Io(io::Error),
}

/// The socket file a listener created; removed on drop if the path still
/// names it (same device and inode).
#[derive(Debug)]
pub struct SocketFile {
    path: PathBuf,
    dev: u64,
    ino: u64,
}

impl SocketFile {
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for SocketFile {
    fn drop(&mut self) {
        match std::fs::symlink_metadata(&self.path) {
            Ok(m) if m.dev() == self.dev && m.ino() == self.ino => {
                if let Err(e) = std::fs::remove_file(&self.path) {
                    tracing::warn!(path = %self.path.display(), "removing the socket file: {e}");
                }
            }
            _ => {}
        }
    }
}

/// Binds `path` as described in the module docs. The listener is
/// blocking; the caller makes it non-blocking for tokio.
pub fn bind(path: &Path) -> Result<(UnixListener, SocketFile), BindError> {
    let l = match UnixListener::bind(path) {
        Ok(l) => l,
        Err(e) if e.kind() == io::ErrorKind::AddrInUse => {
            remove_stale(path)?;
            UnixListener::bind(path).map_err(BindError::Io)?
        }
        Err(e) => return Err(BindError::Io(e)),
    };
    let m = std::fs::symlink_metadata(path).map_err(BindError::Io)?;
    let file = SocketFile { path: path.to_path_buf(), dev: m.dev(), ino: m.ino() };
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(SOCKET_MODE))
        .map_err(BindError::Io)?;
    Ok((l, file))
}

/// `path` exists: remove it if it is a socket nobody listens on.
fn remove_stale(path: &Path) -> Result<(), BindError> {
    let m = std::fs::symlink_metadata(path).map_err(BindError::Io)?;
    if !m.file_type().is_socket() {
        return Err(BindError::Io(io::Error::new(
            io::ErrorKind::AlreadyExists,
            "the path exists and is not a socket (not removed)",
        )));
    }
    match UnixStream::connect(path) {
        Ok(_) => Err(BindError::InUse),
        Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
            tracing::info!(path = %path.display(), "removing a stale socket file nobody listens on");
            std::fs::remove_file(path).map_err(BindError::Io)
        }
        Err(e) => Err(BindError::Io(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(tag: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("sluice-agent-unix-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn fresh_stale_live_and_not_a_socket() {
        let d = scratch("bind");
        let p = d.join("s.mgmt");
        let (l, file) = bind(&p).unwrap();
        let m = std::fs::metadata(&p).unwrap();
        assert!(m.file_type().is_socket());
        assert_eq!(m.permissions().mode() & 0o777, SOCKET_MODE);
        // Live: refused, and the file stays.
        assert!(matches!(bind(&p), Err(BindError::InUse)));
        assert!(p.exists());
        // Stale: the listener is gone but the file is not.
        drop(l);
        std::mem::forget(file);
        let (_l2, file2) = bind(&p).expect("a stale socket is taken over");
        drop(file2);
        assert!(!p.exists(), "removed on drop");
        // Not a socket: never removed.
        std::fs::write(&p, b"x").unwrap();
        assert!(matches!(bind(&p), Err(BindError::Io(_))));
        assert_eq!(std::fs::read(&p).unwrap(), b"x");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn drop_leaves_a_replaced_path_alone() {
        let d = scratch("replaced");
        let p = d.join("s.mgmt");
        let (_l, file) = bind(&p).unwrap();
        std::fs::remove_file(&p).unwrap();
        std::fs::write(&p, b"someone else's").unwrap();
        drop(file);
        assert_eq!(std::fs::read(&p).unwrap(), b"someone else's");
        let _ = std::fs::remove_dir_all(&d);
    }
}
