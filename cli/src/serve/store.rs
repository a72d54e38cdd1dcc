//! Key sets on disk: one file per key set, checksummed, written atomically. Only the owners of
//! the key sets seen are held in memory; the parsed keys are held by the engine under the
//! device budget ([`super::engine::KeyCache`]), the least recently used leaving the device
//! first (never the disk).
//!
//! File layout (`<id>.keys`): the magic `WGFKEYS1` (8 bytes), the SHA-256 of the owner's token
//! (32 bytes), the SHA-256 of the owner hash followed by the key bytes (32 bytes), then the
//! key bytes (the library's evaluation-key wire object, itself checksummed).

use std::collections::HashMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use rand::rngs::OsRng;
use rand::TryRngCore;
use sha2::{Digest, Sha256};

const MAGIC: &[u8; 8] = b"WGFKEYS1";
const HEADER: usize = 8 + 32 + 32;

/// An owner: the SHA-256 of a token (all zeros when the server runs without tokens).
pub(crate) type Owner = [u8; 32];

/// One key set: its owner and its evaluation-key bytes.
pub(crate) struct KeySet {
    /// Who uploaded it.
    pub owner: Owner,
    /// The evaluation keys (wire format).
    pub keys: Vec<u8>,
}

/// What can go wrong with a stored key set.
#[derive(Debug)]
pub(crate) enum StoreError {
    /// No key set has this id (or the id is not one the server makes).
    NotFound,
    /// The file's checksum or layout is wrong: refused, not served.
    Corrupt,
    /// The operating system failed (message without key content).
    Io(String),
    /// No OS randomness for an id.
    Random(String),
}

/// The store.
pub(crate) struct Store {
    dir: PathBuf,
    /// The owner of each key set seen since start (read from its file on first use).
    owners: Mutex<HashMap<String, Owner>>,
}

/// Whether `id` is one [`Store::put`] makes (32 lowercase hex digits): nothing else reaches
/// the file system.
fn valid_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn digest(owner: &Owner, keys: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(owner);
    h.update(keys);
    h.finalize().into()
}

fn io(e: &std::io::Error) -> StoreError {
    StoreError::Io(e.to_string())
}

impl Store {
    /// A store in `dir` (created if absent).
    pub(crate) fn open(dir: &Path) -> Result<Self, StoreError> {
        fs::create_dir_all(dir).map_err(|e| io(&e))?;
        Ok(Self { dir: dir.to_owned(), owners: Mutex::new(HashMap::new()) })
    }

    fn path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.keys"))
    }

    fn owners(&self) -> std::sync::MutexGuard<'_, HashMap<String, Owner>> {
        self.owners.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Stores a key set (disk first, atomically: a temporary file, flushed, then renamed) and
    /// answers its new id (128 bits of OS randomness).
    pub(crate) fn put(&self, owner: Owner, keys: Vec<u8>) -> Result<String, StoreError> {
        let mut raw = [0u8; 16];
        OsRng.try_fill_bytes(&mut raw).map_err(|e| StoreError::Random(e.to_string()))?;
        let id = hex(&raw);
        let tmp = self.dir.join(format!(".{id}.tmp"));
        let write = || -> std::io::Result<()> {
            let mut f = fs::File::create(&tmp)?;
            f.write_all(MAGIC)?;
            f.write_all(&owner)?;
            f.write_all(&digest(&owner, &keys))?;
            f.write_all(&keys)?;
            f.sync_all()?;
            fs::rename(&tmp, self.path(&id))?;
            // The rename itself durable: sync the directory (best effort where unsupported).
            if let Ok(d) = fs::File::open(&self.dir) {
                let _ = d.sync_all();
            }
            Ok(())
        };
        if let Err(e) = write() {
            let _ = fs::remove_file(&tmp);
            return Err(io(&e));
        }
        self.owners().insert(id.clone(), owner);
        Ok(id)
    }

    /// The key set `id` read from disk, its checksum checked.
    pub(crate) fn get(&self, id: &str) -> Result<KeySet, StoreError> {
        if !valid_id(id) {
            return Err(StoreError::NotFound);
        }
        let data = match fs::read(self.path(id)) {
            Ok(d) => d,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(StoreError::NotFound),
            Err(e) => return Err(io(&e)),
        };
        let set = parse(&data)?;
        self.owners().insert(id.to_owned(), set.owner);
        Ok(set)
    }

    /// The owner of `id`: from memory, or from its file (read whole, checksum checked) the
    /// first time.
    pub(crate) fn owner(&self, id: &str) -> Result<Owner, StoreError> {
        if let Some(o) = self.owners().get(id) {
            return Ok(*o);
        }
        self.get(id).map(|set| set.owner)
    }

    /// Deletes `id` from disk (and its owner from memory).
    pub(crate) fn delete(&self, id: &str) -> Result<(), StoreError> {
        if !valid_id(id) {
            return Err(StoreError::NotFound);
        }
        self.owners().remove(id);
        match fs::remove_file(self.path(id)) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(StoreError::NotFound),
            Err(e) => Err(io(&e)),
        }
    }
}

/// A key file's contents, checked.
fn parse(data: &[u8]) -> Result<KeySet, StoreError> {
    let (Some(magic), Some(owner), Some(sum), Some(keys)) =
        (data.get(..8), data.get(8..40), data.get(40..HEADER), data.get(HEADER..))
    else {
        return Err(StoreError::Corrupt);
    };
    if magic != MAGIC {
        return Err(StoreError::Corrupt);
    }
    let owner: Owner = owner.try_into().map_err(|_| StoreError::Corrupt)?;
    if digest(&owner, keys) != sum {
        return Err(StoreError::Corrupt);
    }
    Ok(KeySet { owner, keys: keys.to_vec() })
}
