//! Key sets: on disk (one file per key set, checksummed, written atomically) and in memory
//! under a byte budget, the least recently used leaving memory first (never the disk).
//!
//! File layout (`<id>.keys`): the magic `WGFKEYS1` (8 bytes), the SHA-256 of the owner's token
//! (32 bytes), the SHA-256 of the owner hash followed by the key bytes (32 bytes), then the
//! key bytes (the library's evaluation-key wire object, itself checksummed).

use std::collections::HashMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

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

struct Lru {
    /// id -> (key set, last use tick).
    map: HashMap<String, (Arc<KeySet>, u64)>,
    tick: u64,
    bytes: u64,
}

/// The store.
pub(crate) struct Store {
    dir: PathBuf,
    budget: u64,
    mem: Mutex<Lru>,
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
    /// A store in `dir` (created if absent) holding at most `budget` key bytes in memory.
    pub(crate) fn open(dir: &Path, budget: u64) -> Result<Self, StoreError> {
        fs::create_dir_all(dir).map_err(|e| io(&e))?;
        Ok(Self { dir: dir.to_owned(), budget, mem: Mutex::new(Lru { map: HashMap::new(), tick: 0, bytes: 0 }) })
    }

    fn path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.keys"))
    }

    /// Key bytes held in memory now.
    pub(crate) fn resident_bytes(&self) -> u64 {
        self.mem.lock().unwrap_or_else(PoisonError::into_inner).bytes
    }

    /// Key sets held in memory now.
    pub(crate) fn resident_sets(&self) -> usize {
        self.mem.lock().unwrap_or_else(PoisonError::into_inner).map.len()
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
        self.insert(&id, Arc::new(KeySet { owner, keys }));
        Ok(id)
    }

    fn insert(&self, id: &str, set: Arc<KeySet>) {
        let size = set.keys.len() as u64;
        let mut mem = self.mem.lock().unwrap_or_else(PoisonError::into_inner);
        if size > self.budget {
            return;
        }
        // Evict the least recently used until the new set fits.
        while mem.bytes + size > self.budget {
            let Some(oldest) = mem.map.iter().min_by_key(|(_, (_, t))| *t).map(|(k, _)| k.clone()) else {
                break;
            };
            if let Some((old, _)) = mem.map.remove(&oldest) {
                mem.bytes = mem.bytes.saturating_sub(old.keys.len() as u64);
            }
        }
        mem.tick += 1;
        let tick = mem.tick;
        if let Some((old, _)) = mem.map.insert(id.to_owned(), (set, tick)) {
            mem.bytes = mem.bytes.saturating_sub(old.keys.len() as u64);
        }
        mem.bytes += size;
    }

    /// The key set `id`: from memory, or read back from disk (checksum checked) and cached.
    pub(crate) fn get(&self, id: &str) -> Result<Arc<KeySet>, StoreError> {
        if !valid_id(id) {
            return Err(StoreError::NotFound);
        }
        {
            let mut mem = self.mem.lock().unwrap_or_else(PoisonError::into_inner);
            mem.tick += 1;
            let tick = mem.tick;
            if let Some((set, t)) = mem.map.get_mut(id) {
                *t = tick;
                return Ok(Arc::clone(set));
            }
        }
        let data = match fs::read(self.path(id)) {
            Ok(d) => d,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(StoreError::NotFound),
            Err(e) => return Err(io(&e)),
        };
        let set = Arc::new(parse(&data)?);
        self.insert(id, Arc::clone(&set));
        Ok(set)
    }

    /// Deletes `id` from memory and disk; `Ok(false)` if there was none.
    pub(crate) fn delete(&self, id: &str) -> Result<(), StoreError> {
        if !valid_id(id) {
            return Err(StoreError::NotFound);
        }
        let mut mem = self.mem.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((old, _)) = mem.map.remove(id) {
            mem.bytes = mem.bytes.saturating_sub(old.keys.len() as u64);
        }
        drop(mem);
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
