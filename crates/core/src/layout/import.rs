//! `importPackage`: putting a package from the store into a directory (docs/store-format.md,
//! "Importing a package"), with pnpm 11's import methods, skip rules, staging,
//! `package.json`-last ordering and retries.
//!
//! One difference from pnpm on purpose: pnpm joins every `filesMap` key onto the target with
//! `path.join`, so a key like `../x` writes outside the package directory. Here each key is
//! normalised the way `path.join` would and a key that leaves the target fails the whole
//! package with `ERR_PNPM_UNSAFE_FILE_PATH` before anything is written.

mod file_ops;

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io::{self, ErrorKind, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use rayon::prelude::*;

use crate::blob_modes::BlobModeRule;
use crate::{blob_modes, os_error, platform};

pub use file_ops::{random_hex8, temp_sibling, Done, FileOp, ImportError, Os, SrcMode};

/// The import method a store (or a package) asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ImportMethod {
    Auto,
    Hardlink,
    Copy,
    Clone,
    CloneOrCopy,
}

impl ImportMethod {
    /// Unknown names fail as pnpm's do: `Unknown package import method <m>`.
    pub fn parse(name: &str) -> Result<Self, ImportError> {
        Ok(match name {
            "auto" => ImportMethod::Auto,
            "hardlink" => ImportMethod::Hardlink,
            "copy" => ImportMethod::Copy,
            "clone" => ImportMethod::Clone,
            "clone-or-copy" => ImportMethod::CloneOrCopy,
            _ => {
                return Err(ImportError::linking_failed(format!(
                    "Unknown package import method {name}"
                )))
            }
        })
    }
}

/// What an import actually did: pnpm's `importMethod` result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Imported {
    Clone,
    Hardlink,
    Copy,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResolvedFrom {
    Store,
    LocalDir,
    Remote,
}

impl ResolvedFrom {
    pub fn parse(s: Option<&str>) -> Self {
        match s {
            Some("local-dir") => ResolvedFrom::LocalDir,
            Some("remote") => ResolvedFrom::Remote,
            _ => ResolvedFrom::Store,
        }
    }
}

/// A package's files: relative path (as the index has it) → absolute blob path, in map order.
pub type FilesMap = Vec<(String, PathBuf)>;

/// A side-effects diff chosen by `sideEffectsCacheKey`.
#[derive(Debug, Clone, Default)]
pub struct SideEffects {
    pub added: FilesMap,
    pub deleted: Vec<String>,
}

/// pnpm's overlay: the added entries in their order, then the base entries that are neither
/// deleted nor re-added, in base order. With `keep_bundled` (pnpm 11.28.11's reader) a base
/// entry under `node_modules/` stays though the diff lists it as deleted: the bundled
/// dependencies, which the uploads of older releases (and `@pnpm/worker` 1100.x) list as
/// deleted because their walk skips them, and which those releases' readers then drop.
pub fn apply_side_effects(base: &FilesMap, diff: &SideEffects, keep_bundled: bool) -> FilesMap {
    let added: HashSet<&str> = diff.added.iter().map(|(k, _)| k.as_str()).collect();
    let deleted: HashSet<&str> = diff.deleted.iter().map(String::as_str).collect();
    let is_deleted =
        |k: &str| deleted.contains(k) && !(keep_bundled && k.starts_with("node_modules/"));
    let mut out = diff.added.clone();
    out.extend(
        base.iter()
            .filter(|(k, _)| !added.contains(k.as_str()) && !is_deleted(k))
            .cloned(),
    );
    out
}

/// One `importPackage` request, after the side-effects overlay was chosen.
#[derive(Debug, Clone)]
pub struct ImportRequest {
    pub target_dir: PathBuf,
    pub files: FilesMap,
    pub resolved_from: ResolvedFrom,
    /// `filesResponse.packageImportMethod ?? packageImportMethod ?? 'auto'`.
    pub method: ImportMethod,
    /// The package will run build scripts (and was not built already): never hard-link it.
    pub will_be_built: bool,
    pub force: bool,
    pub keep_modules_dir: bool,
    pub disable_relink_local_dir_deps: bool,
    pub safe_to_skip: bool,
    pub blob_modes: BlobModes,
    /// The running pnpm's rule for a store blob's bits (see [`BlobModeRule`]).
    pub blob_mode_rule: BlobModeRule,
}

/// What the caller knows of the bits of the store blobs it imports (docs/store-format.md,
/// "Blob modes").
#[derive(Debug, Clone, Default, PartialEq)]
pub enum BlobModes {
    /// Nothing: each blob is `stat`ed before it is linked, as pnpm does.
    #[default]
    Unchecked,
    /// Every blob was `stat`ed when the package was read (verification): those whose bits are
    /// not their name's mode, with their bits. Nearly always none, and then linking needs no
    /// `stat` of its own.
    Checked(HashMap<PathBuf, u32>),
}

impl BlobModes {
    /// What is known of `src`'s mode before it is imported, judged under `rule` (see
    /// [`SrcMode::Blob`]): a plain file's where the rule is none.
    pub fn of(&self, src: &Path, rule: BlobModeRule) -> SrcMode {
        let named = match blob_modes::store_entry_mode(src) {
            Some(named) if rule != BlobModeRule::None => named,
            _ => return SrcMode::Plain,
        };
        let exact = rule == BlobModeRule::Exact;
        let actual = match self {
            BlobModes::Unchecked => None,
            BlobModes::Checked(drifted) => Some(drifted.get(src).copied().unwrap_or(named)),
        };
        SrcMode::Blob {
            named,
            actual,
            exact,
        }
    }
}

/// Per-call counts, shared by every thread working on the call.
#[derive(Debug, Default)]
pub struct Stats {
    pub files_linked: AtomicU64,
    pub files_copied: AtomicU64,
    pub files_cloned: AtomicU64,
    pub dirs_made: AtomicU64,
    pub symlinks: AtomicU64,
    pub packages_imported: AtomicU64,
    pub packages_skipped: AtomicU64,
    pub warnings: Mutex<Vec<String>>,
}

impl Stats {
    fn count(&self, done: Done) {
        let counter = match done {
            Done::Linked => &self.files_linked,
            Done::Copied => &self.files_copied,
            Done::Cloned => &self.files_cloned,
            Done::Kept => return,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub fn warn(&self, message: String) {
        self.warnings.lock().unwrap().push(message);
    }

    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }
}

/// One map entry, its key checked and normalised.
#[derive(Debug, Clone)]
struct Entry {
    /// The key as the map has it (pnpm's skip and retry rules look at keys).
    key: String,
    /// `path.join`-normalised, relative to the target, never empty, never leaving it.
    rel: String,
    src: PathBuf,
}

/// `path.join(target, key)` relative to `target`, or an error when the key would leave the
/// target (or name the target itself). Separators: `/` (and `\` on Windows).
pub fn normalize_key(key: &str) -> Option<String> {
    if key.contains('\0') {
        return None;
    }
    let is_sep = |c: char| c == '/' || (cfg!(windows) && c == '\\');
    if cfg!(windows) && (key.contains(':') || key.starts_with('\\')) {
        return None;
    }
    let mut parts: Vec<&str> = Vec::new();
    for seg in key.split(is_sep) {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            s => parts.push(s),
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

fn check_entries(target: &Path, files: &FilesMap) -> Result<Vec<Entry>, ImportError> {
    files
        .iter()
        .map(|(key, src)| match normalize_key(key) {
            Some(rel) => Ok(Entry {
                key: key.clone(),
                rel,
                src: src.clone(),
            }),
            None => Err(ImportError::with_code(
                "ERR_PNPM_UNSAFE_FILE_PATH",
                format!(
                    "Refusing to import the file {} into {}: the path leaves the package directory",
                    crate::json::quote(key),
                    target.display()
                ),
            )),
        })
        .collect()
}

/// The file whose presence says "this package is complete here": `package.json`, or for old
/// rows without one the first key.
fn marker(entries: &[Entry]) -> Result<&Entry, ImportError> {
    entries
        .iter()
        .find(|e| e.key == "package.json")
        .or_else(|| entries.first())
        .ok_or_else(|| {
            ImportError::linking_failed(
                "pickFileFromFilesMap cannot pick a file from an empty FilesMap",
            )
        })
}

/// The per-file operations of one importer: every file, and `package.json` on the exclusive
/// (unstaged) path where it must appear atomically.
#[derive(Debug, Clone, Copy)]
struct Ops {
    file: FileOp,
    marker: FileOp,
}

impl Ops {
    /// The raw operations of the `auto` and `clone-or-copy` probes, whose failure picks another method.
    fn is_probe(self) -> bool {
        matches!(self.file, FileOp::CloneRaw | FileOp::LinkRaw)
    }
}

/// How an exclusive import into a new target went.
enum Exclusive {
    Imported,
    /// The target was there already.
    Existed,
    /// It failed (and the target was removed again).
    Failed(ImportError),
}

const CLONE_RAW: Ops = Ops {
    file: FileOp::CloneRaw,
    marker: FileOp::CloneRaw,
};
const CLONE: Ops = Ops {
    file: FileOp::Clone,
    marker: FileOp::CloneAtomic,
};
const LINK_RAW: Ops = Ops {
    file: FileOp::LinkRaw,
    marker: FileOp::LinkRaw,
};
const LINK_OR_COPY: Ops = Ops {
    file: FileOp::LinkOrCopy,
    marker: FileOp::LinkOrCopy,
};
const COPY: Ops = Ops {
    file: FileOp::Copy,
    marker: FileOp::AtomicCopy,
};

/// What the stateful importers (`auto`, `clone-or-copy`) decided, per store, requested method
/// and target filesystem: pnpm decides once per importer instance; keying by the target's
/// device too keeps one store linked into two filesystems right on both.
type DecisionKey = (PathBuf, ImportMethod, u64);

fn decisions() -> &'static Mutex<HashMap<DecisionKey, Imported>> {
    static D: OnceLock<Mutex<HashMap<DecisionKey, Imported>>> = OnceLock::new();
    D.get_or_init(Default::default)
}

/// The device of the nearest existing ancestor of `dir` (the filesystem the package lands on).
/// Directories whose device was looked up are remembered, so the packages of one
/// `node_modules/.pnpm` cost one `stat` walk, not one per package.
fn target_device(dir: &Path) -> u64 {
    static KNOWN: OnceLock<Mutex<HashMap<PathBuf, u64>>> = OnceLock::new();
    let known = KNOWN.get_or_init(Default::default);
    {
        let known = known.lock().unwrap();
        if let Some(dev) = dir.ancestors().find_map(|a| known.get(a)) {
            return *dev;
        }
    }
    let mut p = Some(dir);
    while let Some(d) = p {
        if let Ok(m) = fs::metadata(d) {
            let dev = platform::file_id(d, &m).map_or(0, |id| id.dev);
            let mut known = known.lock().unwrap();
            if known.len() > 4096 {
                known.clear();
            }
            known.insert(d.to_path_buf(), dev);
            return dev;
        }
        p = d.parent();
    }
    0
}

/// `importPackage` for one package: returns what was done, `None` when the package was
/// already there and nothing was touched.
pub fn import_package(
    store_dir: &Path,
    req: &ImportRequest,
    stats: &Stats,
) -> Result<Option<Imported>, ImportError> {
    let entries = check_entries(&req.target_dir, &req.files)?;
    let method = if req.will_be_built {
        ImportMethod::CloneOrCopy
    } else {
        req.method
    };
    let ctx = Ctx { req, stats };
    let result = match method {
        ImportMethod::Clone => ctx.clone_like(&entries, CLONE, Imported::Clone),
        ImportMethod::Copy => ctx.clone_like(&entries, COPY, Imported::Copy),
        ImportMethod::Hardlink => ctx.hardlink(&entries, LINK_OR_COPY),
        ImportMethod::Auto | ImportMethod::CloneOrCopy => {
            let key = (
                store_dir.to_path_buf(),
                method,
                target_device(&req.target_dir),
            );
            let decided = decisions().lock().unwrap().get(&key).copied();
            match decided {
                Some(Imported::Clone) => ctx.clone_like(&entries, CLONE, Imported::Clone),
                Some(Imported::Copy) => ctx.clone_like(&entries, COPY, Imported::Copy),
                Some(Imported::Hardlink) => ctx.hardlink(&entries, LINK_OR_COPY),
                None if method == ImportMethod::Auto => ctx.auto_probe(&entries, key),
                None => ctx.clone_or_copy_probe(&entries, key),
            }
        }
    }?;
    match result {
        Some(_) => {
            stats.packages_imported.fetch_add(1, Ordering::Relaxed);
            #[cfg(target_os = "macos")]
            if req.resolved_from == ResolvedFrom::Store {
                remove_quarantine(&req.target_dir, &entries);
            }
        }
        None => {
            stats.packages_skipped.fetch_add(1, Ordering::Relaxed);
        }
    }
    Ok(result)
}

struct Ctx<'a> {
    req: &'a ImportRequest,
    stats: &'a Stats,
}

impl Ctx<'_> {
    fn decide(&self, key: DecisionKey, m: Imported) {
        decisions().lock().unwrap().insert(key, m);
    }

    /// The clone and copy importers: import unless the marker already exists at the target.
    fn clone_like(
        &self,
        entries: &[Entry],
        ops: Ops,
        method: Imported,
    ) -> Result<Option<Imported>, ImportError> {
        let target = &self.req.target_dir;
        if self.req.resolved_from == ResolvedFrom::Store
            && !self.req.force
            && target.join(&marker(entries)?.rel).exists()
        {
            return Ok(None);
        }
        self.import_indexed_dir(entries, ops)?;
        Ok(Some(method))
    }

    /// The hardlink importer: relink unless the target's marker is the store's blob (by inode).
    fn hardlink(&self, entries: &[Entry], ops: Ops) -> Result<Option<Imported>, ImportError> {
        if !self.req.force && !self.should_relink(entries)? {
            return Ok(None);
        }
        self.import_indexed_dir(entries, ops)?;
        Ok(Some(Imported::Hardlink))
    }

    fn should_relink(&self, entries: &[Entry]) -> Result<bool, ImportError> {
        let target = &self.req.target_dir;
        if self.req.disable_relink_local_dir_deps
            && self.req.resolved_from == ResolvedFrom::LocalDir
        {
            return Ok(match fs::read_dir(target) {
                Err(_) => true,
                Ok(dir) => {
                    let names: Vec<_> = dir
                        .filter_map(|e| e.ok())
                        .map(|e| e.file_name())
                        .take(2)
                        .collect();
                    names.is_empty() || (names.len() == 1 && names[0] == "node_modules")
                }
            });
        }
        if self.req.resolved_from != ResolvedFrom::Store {
            return Ok(true);
        }
        let m = marker(entries)?;
        let at_target = target.join(&m.rel);
        let linked = match fs::metadata(&at_target) {
            Ok(meta) => meta,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(true),
            Err(e) => return Err(ImportError::os(&e, "stat", &at_target, None)),
        };
        let blob = fs::metadata(&m.src).map_err(|e| ImportError::os(&e, "stat", &m.src, None))?;
        // pnpm compares the inodes only; one that cannot be read (Windows) means relink.
        let ino = |path: &Path, meta: &fs::Metadata| platform::file_id(path, meta).map(|id| id.ino);
        Ok(match (ino(&at_target, &linked), ino(&m.src, &blob)) {
            (Some(a), Some(b)) => a != b,
            _ => true,
        })
    }

    /// `auto`: a raw clone probe (not on Windows), then a raw hardlink probe; the first package
    /// actually imported decides the method for the store for good.
    fn auto_probe(
        &self,
        entries: &[Entry],
        key: DecisionKey,
    ) -> Result<Option<Imported>, ImportError> {
        if Os::HOST.auto_tries_clone() {
            match self.clone_like(entries, CLONE_RAW, Imported::Clone) {
                Ok(None) => return Ok(None),
                Ok(Some(m)) => {
                    self.decide(key, Imported::Clone);
                    return Ok(Some(m));
                }
                Err(_) => {}
            }
        }
        match self.hardlink(entries, LINK_RAW) {
            Ok(None) => Ok(None),
            Ok(Some(m)) => {
                self.decide(key, Imported::Hardlink);
                Ok(Some(m))
            }
            Err(e) if e.is_errno(libc::EXDEV) => {
                self.stats.warn(e.message.clone());
                self.stats
                    .warn("Falling back to copying packages from store".into());
                self.decide(key, Imported::Copy);
                self.clone_like(entries, COPY, Imported::Copy)
            }
            Err(_) => {
                self.decide(key, Imported::Hardlink);
                self.hardlink(entries, LINK_OR_COPY)
            }
        }
    }

    /// `clone-or-copy`: a raw clone probe; success means clone for good, failure copy.
    fn clone_or_copy_probe(
        &self,
        entries: &[Entry],
        key: DecisionKey,
    ) -> Result<Option<Imported>, ImportError> {
        match self.clone_like(entries, CLONE_RAW, Imported::Clone) {
            Ok(None) => Ok(None),
            Ok(Some(m)) => {
                self.decide(key, Imported::Clone);
                Ok(Some(m))
            }
            Err(_) => {
                self.decide(key, Imported::Copy);
                self.clone_like(entries, COPY, Imported::Copy)
            }
        }
    }

    /// The shared-dir path, the exclusive fast path, or staging + rename (docs/store-format.md,
    /// "Importing a package").
    fn import_indexed_dir(&self, entries: &[Entry], ops: Ops) -> Result<(), ImportError> {
        let target = &self.req.target_dir;
        if self.req.safe_to_skip && self.req.resolved_from != ResolvedFrom::LocalDir {
            return self.import_into_shared_dir(entries, ops);
        }
        if !self.req.keep_modules_dir {
            match self.try_exclusive_import(entries, ops)? {
                Exclusive::Imported => return Ok(()),
                // A probe's failure is its answer (the caller falls back): staging would fail
                // alike, and a kill meanwhile would leave the stage behind.
                Exclusive::Failed(e) if ops.is_probe() => return Err(e),
                Exclusive::Failed(_) | Exclusive::Existed => {}
            }
        }
        let stage = temp_sibling(target);
        let staged = (|| {
            make_empty_dir(&stage)?;
            self.import_all_files(&stage, entries, ops.file, ops.file)?;
            if self.req.keep_modules_dir {
                move_or_merge(&target.join("node_modules"), &stage.join("node_modules"))?;
            }
            Ok(())
        })();
        if let Err(e) = staged {
            let _ = fs::remove_dir_all(&stage);
            if let Some(fixed) = self.fixed_file_map(&e, entries) {
                return self.import_indexed_dir(&fixed, ops);
            }
            return Err(e);
        }
        rename_overwrite(&stage, target).map_err(|e| {
            let _ = fs::remove_dir_all(&stage);
            ImportError::os(&e, "rename", &stage, Some(target))
        })
    }

    /// Creates the target exclusively and fills it in place. Otherwise it existed (never empty a
    /// directory another process may be filling) or the import failed (the target is removed
    /// again, and the staging path retries with full error handling).
    fn try_exclusive_import(&self, entries: &[Entry], ops: Ops) -> Result<Exclusive, ImportError> {
        let target = &self.req.target_dir;
        if let Some(parent) = target.parent() {
            mkdir_p(parent, self.stats).map_err(|e| ImportError::os(&e, "mkdir", parent, None))?;
        }
        match fs::create_dir(target) {
            Ok(()) => {
                self.stats.dirs_made.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) if e.kind() == ErrorKind::AlreadyExists => return Ok(Exclusive::Existed),
            Err(e) => return Err(ImportError::os(&e, "mkdir", target, None)),
        }
        if let Err(e) = self.import_all_files(target, entries, ops.file, ops.marker) {
            let _ = fs::remove_dir_all(target);
            return Ok(Exclusive::Failed(e));
        }
        Ok(Exclusive::Imported)
    }

    /// The directories of the map (shortest first), every file but `package.json` (in
    /// parallel for big packages), then `package.json` once all others are complete.
    fn import_all_files(
        &self,
        dir: &Path,
        entries: &[Entry],
        file_op: FileOp,
        marker_op: FileOp,
    ) -> Result<(), ImportError> {
        // Hard links go through a handle on `dir` (see `file_ops::at`); anything that fails
        // there is redone by path, which gives the fallbacks and errors.
        let dir_fd = file_op
            .is_link()
            .then(|| file_ops::at::open_dir(dir).ok())
            .flatten();
        self.make_dirs(dir, dir_fd.as_ref(), entries)?;
        let place = |op: FileOp, e: &Entry| -> Result<(), ImportError> {
            let mode = op.needs(
                self.req.blob_modes.of(&e.src, self.req.blob_mode_rule),
                &e.src,
            )?;
            if let Some(fd) = dir_fd.as_ref().filter(|_| mode.linkable()) {
                match file_ops::at::link(&e.src, fd, &e.rel) {
                    Ok(()) => {
                        self.stats.count(Done::Linked);
                        return Ok(());
                    }
                    Err(err)
                        if op == FileOp::LinkOrCopy
                            && os_error::errno(&err) == Some(libc::EEXIST) =>
                    {
                        return Ok(());
                    }
                    Err(_) => {}
                }
            }
            let done = op.apply(&e.src, &dir.join(&e.rel), mode)?;
            self.stats.count(done);
            Ok(())
        };
        let not_marker = |e: &&Entry| e.key != "package.json";
        if entries.len() >= PARALLEL_FILES {
            entries
                .par_iter()
                .filter(not_marker)
                .try_for_each(|e| place(file_op, e))?;
        } else {
            entries
                .iter()
                .filter(not_marker)
                .try_for_each(|e| place(file_op, e))?;
        }
        if let Some(pkg) = entries.iter().find(|e| e.key == "package.json") {
            place(marker_op, pkg)?;
        }
        Ok(())
    }

    fn make_dirs(
        &self,
        dir: &Path,
        dir_fd: Option<&file_ops::at::Dir>,
        entries: &[Entry],
    ) -> Result<(), ImportError> {
        // Every ancestor too, so that (shortest first) a directory's parent always exists when
        // it is made: `lib/deep/a.js` alone would otherwise send `lib/deep` down the slow path.
        let mut dirs: HashSet<&str> = HashSet::new();
        for e in entries {
            let mut rel = e.rel.as_str();
            while let Some((parent, _)) = rel.rsplit_once('/') {
                if !dirs.insert(parent) {
                    break;
                }
                rel = parent;
            }
        }
        let mut dirs: Vec<&str> = dirs.into_iter().collect();
        dirs.sort_by(|a, b| a.len().cmp(&b.len()).then(a.cmp(b)));
        for d in dirs {
            if let Some(fd) = dir_fd {
                if file_ops::at::mkdir(fd, d).is_ok() {
                    self.stats.dirs_made.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
            }
            let path = dir.join(d);
            match fs::create_dir(&path) {
                Ok(()) => {
                    self.stats.dirs_made.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) if e.kind() == ErrorKind::AlreadyExists => {
                    if !path.is_dir() {
                        return Err(ImportError::os(&e, "mkdir", &path, None));
                    }
                }
                Err(e) if e.kind() == ErrorKind::NotFound => {
                    mkdir_p(&path, self.stats)
                        .map_err(|e| ImportError::os(&e, "mkdir", &path, None))?;
                }
                Err(e) => return Err(ImportError::os(&e, "mkdir", &path, None)),
            }
        }
        Ok(())
    }

    /// `retryWithFixedFileMap`: EEXIST → drop case-insensitive duplicates; ENOENT → sanitise
    /// file names. `None` when the error is not one of these or the map would not change.
    fn fixed_file_map(&self, err: &ImportError, entries: &[Entry]) -> Option<Vec<Entry>> {
        let target = self.req.target_dir.display();
        if err.is_errno(libc::EEXIST) {
            let mut keys: Vec<&Entry> = entries.iter().collect();
            keys.sort_by(|a, b| utf16_cmp(&a.key, &b.key));
            let mut seen = HashSet::new();
            let mut dropped = Vec::new();
            let mut kept = HashSet::new();
            for e in keys {
                if seen.insert(js_lower(&e.key)) {
                    kept.insert(e.key.as_str());
                } else {
                    dropped.push(e.key.clone());
                }
            }
            if dropped.is_empty() {
                return None;
            }
            self.stats.warn(format!(
                "Not all files were linked to {target}. Some of the files have equal names in different case, which is an issue on case-insensitive filesystems. The conflicting file names are: {}",
                format_args!("[{}]", dropped.iter().map(|k| crate::json::quote(k)).collect::<Vec<_>>().join(","))
            ));
            return Some(
                entries
                    .iter()
                    .filter(|e| kept.contains(e.key.as_str()))
                    .cloned()
                    .collect(),
            );
        }
        if err.is_errno(libc::ENOENT) {
            let mut changed = Vec::new();
            let mut fixed = Vec::with_capacity(entries.len());
            for e in entries {
                let key = e
                    .key
                    .split('/')
                    .map(sanitize_filename)
                    .collect::<Vec<_>>()
                    .join("/");
                if key != e.key {
                    changed.push(e.key.clone());
                }
                let rel = normalize_key(&key)?;
                fixed.push(Entry {
                    key,
                    rel,
                    src: e.src.clone(),
                });
            }
            if changed.is_empty() {
                return None;
            }
            self.stats.warn(format!(
                "The package linked to {target} had files with invalid names: {}. They were renamed.",
                changed.join(", ")
            ));
            return Some(fixed);
        }
        None
    }

    /// `safeToSkip`: a content-addressed directory shared by concurrent installs. Never
    /// replaced wholesale: adopted when complete, repaired file by file otherwise.
    fn import_into_shared_dir(&self, entries: &[Entry], ops: Ops) -> Result<(), ImportError> {
        let target = &self.req.target_dir;
        if let Some(parent) = target.parent() {
            fs::create_dir_all(parent).map_err(|e| ImportError::os(&e, "mkdir", parent, None))?;
        }
        let created = match fs::create_dir(target) {
            Ok(()) => true,
            Err(e) if e.kind() == ErrorKind::AlreadyExists => false,
            Err(e) => return Err(ImportError::os(&e, "mkdir", target, None)),
        };
        if created {
            match self.import_all_files(target, entries, ops.file, ops.marker) {
                Ok(()) => return Ok(()),
                Err(e) => {
                    if let Some(fixed) = self.fixed_file_map(&e, entries) {
                        return self.import_indexed_dir(&fixed, ops);
                    }
                }
            }
        }
        let pkg_first = || {
            let (pkg, rest): (Vec<&Entry>, Vec<&Entry>) =
                entries.iter().partition(|e| e.key == "package.json");
            pkg.into_iter().chain(rest)
        };
        if pkg_first().all(|e| file_matches(&target.join(&e.rel), &e.src)) {
            return Ok(());
        }
        let repaired = (|| {
            for d in entries
                .iter()
                .filter_map(|e| e.rel.rsplit_once('/').map(|(d, _)| d))
            {
                make_dir_replacing_files(target, d)?;
            }
            let (pkg, rest): (Vec<&Entry>, Vec<&Entry>) =
                entries.iter().partition(|e| e.key == "package.json");
            for e in rest.into_iter().chain(pkg) {
                let dest = target.join(&e.rel);
                if file_matches(&dest, &e.src) {
                    continue;
                }
                let tmp = temp_sibling(&dest);
                let mode = self.req.blob_modes.of(&e.src, self.req.blob_mode_rule);
                let placed = ops.file.apply(&e.src, &tmp, mode).and_then(|done| {
                    if fs::symlink_metadata(&dest).is_ok_and(|m| m.is_dir()) {
                        let _ = fs::remove_dir_all(&dest);
                    }
                    fs::rename(&tmp, &dest)
                        .map_err(|err| ImportError::os(&err, "rename", &tmp, Some(&dest)))?;
                    // rename(2) of a hard link onto another link of the same inode (a
                    // concurrent repair put the blob there first) succeeds and does nothing.
                    let _ = fs::remove_file(&tmp);
                    self.stats.count(done);
                    Ok(())
                });
                if let Err(err) = placed {
                    let _ = fs::remove_file(&tmp);
                    if !file_matches(&dest, &e.src) {
                        return Err(err);
                    }
                }
            }
            Ok(())
        })();
        match repaired {
            Ok(()) => Ok(()),
            Err(e) => match self.fixed_file_map(&e, entries) {
                Some(fixed) => self.import_indexed_dir(&fixed, ops),
                None => Err(e),
            },
        }
    }
}

/// `mkdir -p` that counts the directories it made (`create_dir_all` semantics: an existing
/// directory is fine, anything else in the way is an error).
pub fn mkdir_p(path: &Path, stats: &Stats) -> io::Result<()> {
    match fs::create_dir(path) {
        Ok(()) => {
            stats.dirs_made.fetch_add(1, Ordering::Relaxed);
            Ok(())
        }
        Err(e) if e.kind() == ErrorKind::NotFound => {
            match path.parent() {
                Some(parent) if parent != path => mkdir_p(parent, stats)?,
                _ => return Err(e),
            }
            match fs::create_dir(path) {
                Ok(()) => {
                    stats.dirs_made.fetch_add(1, Ordering::Relaxed);
                    Ok(())
                }
                Err(e) if e.kind() == ErrorKind::AlreadyExists && path.is_dir() => Ok(()),
                Err(e) => Err(e),
            }
        }
        Err(e) if e.kind() == ErrorKind::AlreadyExists && path.is_dir() => Ok(()),
        Err(e) => Err(e),
    }
}

/// Packages with at least this many files have their files imported in parallel.
const PARALLEL_FILES: usize = 48;

/// `mkdir -p <root>/<rel>`, first removing a non-directory that stands where a directory of the
/// path must be.
fn make_dir_replacing_files(root: &Path, rel: &str) -> Result<(), ImportError> {
    let mut path = root.to_path_buf();
    for seg in rel.split('/') {
        path.push(seg);
        match fs::symlink_metadata(&path) {
            Ok(m) if m.is_dir() => continue,
            Ok(_) => {
                fs::remove_file(&path).map_err(|e| ImportError::os(&e, "unlink", &path, None))?
            }
            Err(_) => {}
        }
        match fs::create_dir(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
            Err(e) => return Err(ImportError::os(&e, "mkdir", &path, None)),
        }
    }
    Ok(())
}

/// A regular file (not a symlink) with the mode an import gives it, that is the blob (same
/// device and inode) or has its bytes (pnpm's `mismatchReason`).
fn file_matches(dest: &Path, blob: &Path) -> bool {
    let (Ok(d), Ok(b)) = (fs::symlink_metadata(dest), fs::metadata(blob)) else {
        return false;
    };
    if !d.is_file() {
        return false;
    }
    let same = platform::same_file(dest, &d, blob, &b);
    if !mode_matches(blob, &d, &b, same) {
        return false;
    }
    same || (d.len() == b.len() && same_bytes(dest, blob).unwrap_or(false))
}

/// The file has the mode an import gives it: a store blob's name's, anything else's own. A hard
/// link to a store blob may instead have bits that are linkable for it (docs/store-format.md,
/// "Blob modes"). Windows files have no mode to compare.
fn mode_matches(blob: &Path, dest: &fs::Metadata, src: &fs::Metadata, same: bool) -> bool {
    if cfg!(windows) {
        return true;
    }
    let named = blob_modes::store_entry_mode(blob);
    let expected = named.unwrap_or(platform::permission_bits(src) & 0o777);
    let actual = platform::permission_bits(dest) & 0o777;
    actual == expected || (same && named.is_some() && blob_modes::is_linkable(actual, expected))
}

fn same_bytes(a: &Path, b: &Path) -> io::Result<bool> {
    let (mut fa, mut fb) = (fs::File::open(a)?, fs::File::open(b)?);
    let (mut ba, mut bb) = (vec![0u8; 64 * 1024], vec![0u8; 64 * 1024]);
    loop {
        let n = read_full(&mut fa, &mut ba)?;
        let m = read_full(&mut fb, &mut bb)?;
        if n != m || ba[..n] != bb[..m] {
            return Ok(false);
        }
        if n == 0 {
            return Ok(true);
        }
    }
}

fn read_full(f: &mut fs::File, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

/// Creates `dir` (and its parents), emptying it first when a crashed run left it behind.
fn make_empty_dir(dir: &Path) -> Result<(), ImportError> {
    let err = |e: &io::Error| ImportError::os(e, "mkdir", dir, None);
    if let Some(parent) = dir.parent() {
        fs::create_dir_all(parent).map_err(|e| err(&e))?;
    }
    match fs::create_dir(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {
            let _ = fs::remove_dir_all(dir);
            fs::create_dir(dir).map_err(|e| err(&e))
        }
        Err(e) => Err(err(&e)),
    }
}

/// keepModulesDir: moves the existing `node_modules` into the stage; when the package ships a
/// `node_modules` of its own, moves only the entries the stage does not have.
fn move_or_merge(from: &Path, to: &Path) -> Result<(), ImportError> {
    match fs::rename(from, to) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        Err(e)
            if matches!(
                os_error::errno(&e),
                Some(libc::ENOTEMPTY) | Some(libc::EEXIST) | Some(libc::EPERM)
            ) =>
        {
            let entries =
                fs::read_dir(from).map_err(|e| ImportError::os(&e, "scandir", from, None))?;
            for entry in entries.flatten() {
                let dest = to.join(entry.file_name());
                if fs::symlink_metadata(&dest).is_err() {
                    fs::rename(entry.path(), &dest)
                        .map_err(|e| ImportError::os(&e, "rename", &entry.path(), Some(&dest)))?;
                }
            }
            Ok(())
        }
        Err(e) => Err(ImportError::os(&e, "rename", from, Some(to))),
    }
}

/// `rename-overwrite`: rename, and when the destination is in the way swap it aside, rename,
/// and delete the old one. The net effect: `to` is replaced wholesale.
pub fn rename_overwrite(from: &Path, to: &Path) -> io::Result<()> {
    let started = Instant::now();
    let mut retries = 0;
    loop {
        let e = match fs::rename(from, to) {
            Ok(()) => return Ok(()),
            Err(e) => e,
        };
        if retries >= 3 {
            return Err(e);
        }
        retries += 1;
        match os_error::errno(&e) {
            Some(libc::ENOTEMPTY) | Some(libc::EEXIST) | Some(libc::ENOTDIR) => {
                let mut aside = to.as_os_str().to_owned();
                aside.push(format!("_{:x}_{}", std::process::id(), random_hex8()));
                let aside = PathBuf::from(aside);
                if fs::rename(to, &aside).is_ok() {
                    match fs::rename(from, to) {
                        Ok(()) => {
                            remove_any(&aside);
                            return Ok(());
                        }
                        Err(_) => {
                            let _ = fs::rename(&aside, to);
                        }
                    }
                }
                remove_any(to);
            }
            Some(libc::ENOENT) => {
                if !from.exists() {
                    return Err(e);
                }
                if let Some(parent) = to.parent() {
                    fs::create_dir_all(parent)?;
                }
            }
            Some(libc::EPERM) | Some(libc::EACCES) | Some(libc::EBUSY) => {
                if started.elapsed() > Duration::from_secs(60) {
                    return Err(e);
                }
                remove_any(to);
                std::thread::sleep(Duration::from_millis(10 * retries));
            }
            _ => return Err(e),
        }
    }
}

fn remove_any(path: &Path) {
    match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => {
            let _ = fs::remove_dir_all(path);
        }
        Ok(_) => {
            let _ = platform::remove_link(path);
        }
        Err(_) => {}
    }
}

/// JavaScript's `<` on strings: UTF-16 code unit order.
fn utf16_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

/// `toLowerCase()` close enough for grouping names (full Unicode lowercase mapping).
fn js_lower(s: &str) -> String {
    s.to_lowercase()
}

/// `sanitize-filename` 1.6 with an empty replacement: drops `/?<>\:*|"`, C0 and C1 controls;
/// a name of only dots and Windows reserved names become empty; trailing dots and spaces go;
/// at most 255 UTF-8 bytes.
pub fn sanitize_filename(name: &str) -> String {
    let mut s: String = name
        .chars()
        .filter(|&c| {
            let illegal = matches!(c, '/' | '?' | '<' | '>' | '\\' | ':' | '*' | '|' | '"');
            let control = c as u32 <= 0x1f || (0x80..=0x9f).contains(&(c as u32));
            !(illegal || control)
        })
        .collect();
    if !s.is_empty() && s.chars().all(|c| c == '.') {
        s.clear();
    }
    if is_windows_reserved(&s) {
        s.clear();
    }
    let trimmed = s.trim_end_matches(['.', ' ']).len();
    s.truncate(trimmed);
    if s.len() > 255 {
        let mut end = 255;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
    s
}

fn is_windows_reserved(s: &str) -> bool {
    let stem = s.split('.').next().unwrap_or("").to_ascii_lowercase();
    matches!(stem.as_str(), "con" | "prn" | "aux" | "nul")
        || (stem.len() == 4
            && (stem.starts_with("com") || stem.starts_with("lpt"))
            && stem.as_bytes()[3].is_ascii_digit())
}

/// The quarantine attribute travels with clones and copies and is shared through hard links;
/// Gatekeeper would refuse to load a quarantined native module (docs/store-format.md,
/// "Importing a package").
#[cfg(target_os = "macos")]
fn remove_quarantine(target: &Path, entries: &[Entry]) {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let name = CString::new("com.apple.quarantine").unwrap();
    for e in entries {
        let lower = e.rel.to_lowercase();
        if lower.ends_with(".node") || lower.ends_with(".dylib") || lower.ends_with(".so") {
            if let Ok(path) = CString::new(target.join(&e.rel).as_os_str().as_bytes()) {
                // SAFETY: both strings are NUL-terminated and live across the call.
                unsafe { libc::removexattr(path.as_ptr(), name.as_ptr(), 0) };
            }
        }
    }
}

#[cfg(test)]
mod tests;
