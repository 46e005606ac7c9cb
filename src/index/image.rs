//! One image of an index in memory, read by several read-only SQLite databases at once, so a
//! server's workers search side by side without a copy each. SQLite reads the bytes in place
//! (`sqlite3_deserialize` with `SQLITE_DESERIALIZE_READONLY` and without `FREEONCLOSE`); the
//! per-connection scratch tables a search needs live in each connection's `temp` schema
//! (`stems::prepare`).

use rusqlite::{Connection, MAIN_DB};

use super::stems;

/// The bytes of an index database. The connections made by [`Image::readers`] must be closed
/// before it is dropped: `Index` declares them first, so they are.
pub struct Image(Box<[u8]>);

impl Image {
    /// `n` (at least one) read-only databases over `bytes`, ready to search, and the image
    /// they read. (On an error, the connections made so far are dropped before the image:
    /// locals drop in reverse order.)
    ///
    /// # Safety
    ///
    /// The caller must close (drop) every returned connection before it drops the image.
    pub unsafe fn readers(bytes: Vec<u8>, n: usize) -> rusqlite::Result<(Image, Vec<Connection>)> {
        // No copy: a buffer of its exact size is boxed in place (an `Arc` would copy the
        // whole index once more, 26 MB for a 2,800-page manual).
        let image = Image(bytes.into_boxed_slice());
        let mut conns = Vec::with_capacity(n.max(1));
        for _ in 0..n.max(1) {
            let mut conn = Connection::open_in_memory()?;
            // SAFETY: the slice points into `image.0`, a heap allocation that never moves and is
            // never written. The caller keeps the image until these connections are closed
            // (this function's contract), and SQLite only reads the buffer (READONLY) and never
            // frees it (no FREEONCLOSE), so the `'static` lifetime is never relied on past the
            // image's life.
            let bytes: &'static [u8] = unsafe { std::slice::from_raw_parts(image.0.as_ptr(), image.0.len()) };
            conn.deserialize_bytes(MAIN_DB, bytes)?;
            // Sorts stay in memory: the kernel sandbox grants no temporary folder.
            conn.pragma_update(None, "temp_store", "MEMORY")?;
            stems::prepare(&conn)?;
            conns.push(conn);
        }
        Ok((image, conns))
    }
}
