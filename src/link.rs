//! Linking a whole `node_modules`: the dependency symlinks (`symlinkAllModules`, store contract
//! §8.1), `hardLinkDir` (§8.2), and the batch that imports a lockfile's worth of packages and
//! then links their dependencies in one call.
//!
//! Why a batch: pnpm imports package by package, each a message to a worker thread (at most 4 at
//! a time). Linking is syscall-bound (mkdir, link, symlink at 10-30 us each), so the win is in
//! keeping every core in the kernel all the time: one rayon work-stealing batch over all
//! packages (big packages split their files across the pool too), file maps read from the
//! store index on the pool threads so they never cross into JS, then all symlinks.

use std::collections::HashSet;
use std::ffi::OsString;
use std::fs;
use std::io::{self, ErrorKind};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Mutex;
use std::time::Instant;

use rayon::prelude::*;

use crate::import::{
    self, apply_side_effects, rename_overwrite, FilesMap, ImportError, ImportMethod, ImportRequest,
    Imported, ResolvedFrom, SideEffects, Stats,
};
use crate::package_index::{self, PackageFileInfo, SideEffectsDiff};
use crate::symlink_entry::{normalize_target, SYMLINK_MODE};
use crate::{os_error, platform, store};

/// A side-effects entry's recorded symlinks (pnpm 11.28): relative link path → target text,
/// created in the package after its files.
pub type Symlinks = Vec<(String, String)>;

/// One package of `symlinkAllModules`: link each child into `modules` under its alias.
#[derive(Debug, Clone)]
pub struct SymlinkDep {
    /// Alias → absolute directory of the package the link points to, in object key order.
    pub children: Vec<(String, PathBuf)>,
    pub modules: PathBuf,
    /// The package's own name: a child with this alias is a self-reference and is skipped.
    pub name: String,
}

/// A failure of `symlinkAllModules` or `hardLinkDir`: `code` is pnpm's when it has one, else
/// `None` (the JS layer then uses `ERR_PNPM_SYMLINK_FAILED` / `ERR_PNPM_HARDLINK_FAILED`).
#[derive(Debug, Clone, PartialEq)]
pub struct LinkError {
    pub code: Option<String>,
    pub message: String,
    pub site: Option<crate::os_error::FsSite>,
}

impl From<ImportError> for LinkError {
    fn from(e: ImportError) -> Self {
        let code = (e.errno.is_some() || e.code != "ERR_PNPM_LINKING_FAILED").then_some(e.code);
        LinkError {
            code,
            message: e.message,
            site: e.site,
        }
    }
}

fn os_err(e: &io::Error, syscall: &str, path: &Path, dest: Option<&Path>) -> LinkError {
    ImportError::os(e, syscall, path, dest).into()
}

/// `symlinkAllModules`: every dependency link of every package, all links in parallel (not
/// package by package: the hoisted `.pnpm/node_modules` alone holds about a thousand links of
/// one "package", which would otherwise run on one thread while the others idle).
pub fn symlink_all_modules(deps: &[SymlinkDep], stats: &Stats) -> Result<(), LinkError> {
    let links: Vec<(&SymlinkDep, &String, &PathBuf)> = deps
        .iter()
        .flat_map(|dep| {
            dep.children
                .iter()
                .filter(move |(alias, _)| *alias != dep.name)
                .map(move |(alias, target)| (dep, alias, target))
        })
        .collect();
    links
        .par_iter()
        .with_min_len(16)
        .try_for_each(|&(dep, alias, target)| {
            let link = safe_join_modules_dir(&dep.modules, alias)?;
            if symlink_dir(target, &link, stats)? {
                stats.symlinks.fetch_add(1, Ordering::Relaxed);
            }
            Ok(())
        })
}

/// The alias must be a valid (old-style) npm package name and the link must land strictly
/// inside `modules`, so that no alias can escape `node_modules` or replace `.bin`/`.pnpm`.
pub fn safe_join_modules_dir(modules: &Path, alias: &str) -> Result<PathBuf, LinkError> {
    let invalid = |resolved: Option<&Path>| LinkError {
        code: Some("ERR_PNPM_INVALID_DEPENDENCY_NAME".into()),
        message: format!(
            "Refusing to place a dependency under {} with the invalid alias {}{}",
            modules.display(),
            crate::json::quote(alias),
            resolved
                .map(|r| format!(" (it resolves to {})", r.display()))
                .unwrap_or_default()
        ),
        site: None,
    };
    if !valid_for_old_packages(alias) {
        return Err(invalid(None));
    }
    let resolved_dir = resolve(modules);
    let link = resolve(&modules.join(alias));
    if link == resolved_dir || !link.starts_with(&resolved_dir) {
        return Err(invalid(Some(&link)));
    }
    Ok(modules.join(alias))
}

/// validate-npm-package-name 7's `validForOldPackages` (errors only; warnings such as capitals,
/// builtin names or length are allowed).
pub fn valid_for_old_packages(name: &str) -> bool {
    if name.is_empty() || name.starts_with('.') || name.starts_with('-') || name.starts_with('_') {
        return false;
    }
    if js_trim(name) != name {
        return false;
    }
    let lower = name.to_lowercase();
    if lower == "node_modules" || lower == "favicon.ico" {
        return false;
    }
    if uri_component_safe(name) {
        return true;
    }
    // `^(?:@([^/]+?)[/])?([^/]+?)$` with both parts URL-safe and the name not starting with '.'.
    let Some(rest) = name.strip_prefix('@') else {
        return false;
    };
    let Some((scope, pkg)) = rest.split_once('/') else {
        return false;
    };
    !scope.is_empty()
        && !pkg.is_empty()
        && !pkg.contains('/')
        && !pkg.starts_with('.')
        && uri_component_safe(scope)
        && uri_component_safe(pkg)
}

/// `encodeURIComponent(s) === s`.
fn uri_component_safe(s: &str) -> bool {
    s.chars().all(|c| {
        c.is_ascii_alphanumeric()
            || matches!(c, '-' | '_' | '.' | '!' | '~' | '*' | '\'' | '(' | ')')
    })
}

/// `String.prototype.trim`: Unicode white space plus the BOM.
fn js_trim(s: &str) -> &str {
    s.trim_matches(|c: char| c.is_whitespace() || c == '\u{feff}')
}

/// `path.resolve` for an absolute or relative path: absolute, `.`/`..` resolved lexically.
pub fn resolve(p: &Path) -> PathBuf {
    let base = if p.is_absolute() {
        PathBuf::from("/")
    } else {
        std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"))
    };
    let mut out = base;
    for c in p.components() {
        match c {
            Component::Prefix(_) => out = PathBuf::from(c.as_os_str()),
            // Keeps the drive of a Windows path (`C:` + `\`); `/` on Unix.
            Component::RootDir => out.push(c.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(s) => out.push(s),
        }
    }
    out
}

/// `path.relative(from, to)` for two resolved paths.
pub fn relative(from: &Path, to: &Path) -> PathBuf {
    let f: Vec<_> = from.components().collect();
    let t: Vec<_> = to.components().collect();
    let common = f.iter().zip(&t).take_while(|(a, b)| a == b).count();
    let mut out = PathBuf::new();
    for _ in common..f.len() {
        out.push("..");
    }
    for c in &t[common..] {
        out.push(c.as_os_str());
    }
    out
}

/// symlink-dir's sync semantics: a relative `dir` symlink at `link` pointing to `target` (on
/// Windows a junction with the absolute target, as symlink-dir makes it there).
/// Returns whether a link was created (`false`: the right link was already there).
pub fn symlink_dir(target: &Path, link: &Path, stats: &Stats) -> Result<bool, LinkError> {
    let target = resolve(target);
    let link = resolve(link);
    if target == link {
        return Err(LinkError {
            code: None,
            message: format!(
                "Symlink path is the same as the target path ({})",
                target.display()
            ),
            site: None,
        });
    }
    let parent = link.parent().unwrap_or(Path::new("/")).to_path_buf();
    let text = if cfg!(windows) {
        target.clone()
    } else {
        relative(&parent, &target)
    };
    let mut made_parent = false;
    let mut moved_aside = false;
    loop {
        let e = match platform::symlink_dir(&text, &link) {
            Ok(()) => return Ok(true),
            Err(e) => e,
        };
        match os_error::errno(&e) {
            Some(libc::ENOENT) if !made_parent => {
                made_parent = true;
                import::mkdir_p(&parent, stats).map_err(|e| os_err(&e, "mkdir", &parent, None))?;
            }
            Some(libc::EEXIST) | Some(libc::EISDIR) if !moved_aside => {
                match fs::read_link(&link) {
                    Ok(existing) => {
                        if resolve(&parent.join(existing)) == target {
                            return Ok(false);
                        }
                        platform::remove_link(&link)
                            .map_err(|e| os_err(&e, "unlink", &link, None))?;
                    }
                    Err(_) => {
                        // A real directory or file: move it out of the way, as pnpm does.
                        moved_aside = true;
                        let mut ignored = OsString::from(".ignored_");
                        ignored.push(link.file_name().unwrap_or_default());
                        let ignored = parent.join(ignored);
                        let moved = rename_overwrite(&link, &ignored);
                        stats.warn(if moved.is_ok() {
                            format!("Symlink wanted name was occupied by directory or file. Old entity moved: \"{}\" → \"{}\".", link.display(), ignored.display())
                        } else {
                            let _ = fs::remove_dir_all(&link).or_else(|_| fs::remove_file(&link));
                            format!("Symlink wanted name was occupied by directory or file. Old entity removed: \"{}\".", link.display())
                        });
                    }
                }
            }
            _ => return Err(os_err(&e, "symlink", &text, Some(&link))),
        }
    }
}

/// `hardLinkDir(src, destDirs)` as `@pnpm/fs.hard-link-dir` 1100.0.x (what pnpm 11's worker
/// ships) does it: each destination is created if missing and filled in place with hard links
/// of `src`'s files, `node_modules` left out at every depth. A destination's own `node_modules`
/// and entries `src` does not have stay (a sibling may be working in there); an entry of the
/// wrong kind is removed to make room; a different file already there is replaced through a
/// rename of a temp sibling, so readers see the old file or the new one. A missing `src` leaves
/// the destinations empty, with a warning.
pub fn hard_link_dir(src: &Path, dest_dirs: &[PathBuf], stats: &Stats) -> Result<(), LinkError> {
    let src_resolved = resolve(src);
    let targets: Vec<PathBuf> = dest_dirs
        .iter()
        .filter(|d| resolve(d) != src_resolved)
        .cloned()
        .collect();
    if targets.is_empty() {
        return Ok(());
    }
    for t in &targets {
        fs::create_dir_all(t).map_err(|e| os_err(&e, "mkdir", t, None))?;
    }
    walk(src, &targets, true, stats)
}

fn walk(dir: &Path, outs: &[PathBuf], root: bool, stats: &Stats) -> Result<(), LinkError> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if root && e.kind() == ErrorKind::NotFound => {
            stats.warn(format!(
                "Source directory not found when creating hardLinks for: {}. Creating destinations as empty: {}",
                dir.display(),
                outs.iter().map(|o| o.display().to_string()).collect::<Vec<_>>().join(", ")
            ));
            return Ok(());
        }
        Err(e) => return Err(os_err(&e, "scandir", dir, None)),
    };
    for entry in entries {
        let entry = entry.map_err(|e| os_err(&e, "scandir", dir, None))?;
        let name = entry.file_name();
        if name == "node_modules" {
            continue;
        }
        let path = entry.path();
        let meta = fs::symlink_metadata(&path).map_err(|e| os_err(&e, "lstat", &path, None))?;
        if meta.is_dir() {
            let mut sub = Vec::with_capacity(outs.len());
            for o in outs {
                let s = o.join(&name);
                clear_mismatched(&s, true)?;
                match fs::create_dir_all(&s) {
                    Ok(()) => {}
                    Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(os_err(&e, "mkdir", &s, None)),
                }
                sub.push(s);
            }
            walk(&path, &sub, false, stats)?;
            continue;
        }
        for out in outs {
            match link_or_copy_file(&path, &out.join(&name), &meta, stats) {
                // A dangling symlink in the source.
                Err((e, _)) if e.kind() == ErrorKind::NotFound => {}
                Err((_, err)) => return Err(err),
                Ok(()) => {}
            }
        }
    }
    Ok(())
}

type Failure = (io::Error, LinkError);

fn failure(e: io::Error, syscall: &str, path: &Path, dest: Option<&Path>) -> Failure {
    let err = os_err(&e, syscall, path, dest);
    (e, err)
}

fn link_or_copy_file(
    src: &Path,
    dest: &Path,
    src_meta: &fs::Metadata,
    stats: &Stats,
) -> Result<(), Failure> {
    match link_or_copy(src, dest, stats) {
        Ok(()) => return Ok(()),
        Err((e, _)) if e.kind() == ErrorKind::NotFound => {
            if let Some(parent) = dest.parent() {
                fs::create_dir_all(parent).map_err(|e| failure(e, "mkdir", parent, None))?;
            }
            return link_or_copy(src, dest, stats);
        }
        Err((e, _)) if e.kind() == ErrorKind::AlreadyExists => {}
        Err(f) => return Err(f),
    }
    // Most destination files already are the source's file (both came from the same store blob).
    let same = match fs::symlink_metadata(dest) {
        Ok(d) => platform::same_file(dest, &d, src, src_meta),
        Err(e) if e.kind() == ErrorKind::NotFound => false,
        Err(e) => return Err(failure(e, "lstat", dest, None)),
    };
    if same {
        return Ok(());
    }
    let tmp = crate::import::temp_sibling(dest);
    let _ = fs::remove_dir_all(&tmp).or_else(|_| fs::remove_file(&tmp));
    let replaced = link_or_copy(src, &tmp, stats)
        .and_then(|()| {
            clear_mismatched(dest, false).map_err(|e| (io::Error::other(e.message.clone()), e))
        })
        .and_then(|()| fs::rename(&tmp, dest).map_err(|e| failure(e, "rename", &tmp, Some(dest))))
        // Renaming a hard link onto another link of the same inode succeeds and does nothing.
        .map(|()| {
            let _ = fs::remove_file(&tmp);
        });
    if replaced.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    replaced
}

/// Removes `path` when it is not of the wanted kind (directory or not).
fn clear_mismatched(path: &Path, want_dir: bool) -> Result<(), LinkError> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() == want_dir => Ok(()),
        Ok(m) => {
            let removed = if m.is_dir() {
                fs::remove_dir_all(path)
            } else {
                fs::remove_file(path)
            };
            removed.map_err(|e| os_err(&e, "rm", path, None))
        }
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        Err(e) => Err(os_err(&e, "lstat", path, None)),
    }
}

/// link; EXDEV or ENOENT (OverlayFS reports ENOENT across layers) → copy.
fn link_or_copy(src: &Path, dest: &Path, stats: &Stats) -> Result<(), Failure> {
    match fs::hard_link(src, dest) {
        Ok(()) => {
            stats.files_linked.fetch_add(1, Ordering::Relaxed);
            Ok(())
        }
        Err(e) if matches!(os_error::errno(&e), Some(libc::EXDEV) | Some(libc::ENOENT)) => {
            fs::copy(src, dest).map_err(|e| failure(e, "copyfile", src, Some(dest)))?;
            stats.files_copied.fetch_add(1, Ordering::Relaxed);
            Ok(())
        }
        Err(e) => Err(failure(e, "link", src, Some(dest))),
    }
}

/// Where a batch package's files come from.
#[derive(Debug, Clone)]
pub enum FilesSource {
    /// The file map (and the side-effects diffs by cache key), as a caller that already read
    /// the index has it.
    Map {
        files: FilesMap,
        side_effects: Vec<(String, SideEffects)>,
    },
    /// The package's store-index key: the row is read and decoded on the pool thread.
    IndexKey(String),
}

#[derive(Debug, Clone)]
pub struct BatchPackage {
    pub target_dir: PathBuf,
    pub source: FilesSource,
    pub side_effects_cache_key: Option<String>,
    pub requires_build: bool,
    pub force: bool,
    pub keep_modules_dir: bool,
    pub safe_to_skip: bool,
    pub disable_relink_local_dir_deps: bool,
    pub resolved_from: ResolvedFrom,
    /// Overrides the batch's method for this package (`filesResponse.packageImportMethod`).
    pub method: Option<ImportMethod>,
}

impl BatchPackage {
    /// A package from the store imported the plain way: no side effects, no build, not forced,
    /// the batch's import method.
    pub fn from_store(target_dir: PathBuf, source: FilesSource) -> Self {
        BatchPackage {
            target_dir,
            source,
            side_effects_cache_key: None,
            requires_build: false,
            force: false,
            keep_modules_dir: false,
            safe_to_skip: false,
            disable_relink_local_dir_deps: false,
            resolved_from: ResolvedFrom::Store,
            method: None,
        }
    }
}

#[derive(Debug, Clone)]
pub struct BatchRequest {
    pub store_dir: PathBuf,
    pub method: ImportMethod,
    pub packages: Vec<BatchPackage>,
    pub symlinks: Vec<SymlinkDep>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PackageOutcome {
    pub is_built: bool,
    pub imported: Option<Imported>,
}

pub struct BatchOutcome {
    /// One per package, in request order.
    pub packages: Vec<Result<PackageOutcome, ImportError>>,
    /// The symlink phase's failure; it does not run when an import failed.
    pub symlinks: Result<(), LinkError>,
    pub import_ms: f64,
    pub symlink_ms: f64,
}

/// Imports every package as one work-stealing batch on the current rayon pool, then (when all
/// succeeded) creates every dependency symlink.
/// Takes the request by value: file maps given as maps move into the imports uncopied.
pub fn link_batch(req: BatchRequest, stats: &Stats) -> BatchOutcome {
    let started = Instant::now();
    let store = req
        .packages
        .iter()
        .any(|p| matches!(p.source, FilesSource::IndexKey(_)))
        .then(|| store::open(&req.store_dir));
    let files_dir = format!("{}/files", req.store_dir.display());
    // First every package's file map (index reads serialise on the connection, decoding runs in
    // parallel), so that the imports can start with the biggest packages: longest first keeps
    // every thread busy to the end instead of leaving one with core-js while the others idle.
    // The rows of all keyed packages in one read transaction (one snapshot of the index, one
    // statement per 999 keys instead of a query per package).
    let keys: Vec<&str> = req
        .packages
        .iter()
        .filter_map(|p| match &p.source {
            FilesSource::IndexKey(key) => Some(key.as_str()),
            FilesSource::Map { .. } => None,
        })
        .collect();
    let rows: Result<Vec<Mutex<Option<Vec<u8>>>>, ImportError> = match &store {
        Some(store) if !keys.is_empty() => store
            .index
            .get_many(&keys)
            .map(|rows| rows.into_iter().map(Mutex::new).collect())
            .map_err(|e| ImportError::with_code("ERR_PNPM_STORE_INDEX", e.message)),
        _ => Ok(vec![]),
    };
    let mut row_of = Vec::with_capacity(req.packages.len());
    let mut next_row = 0;
    for p in &req.packages {
        row_of.push(matches!(p.source, FilesSource::IndexKey(_)).then(|| {
            next_row += 1;
            next_row - 1
        }));
    }
    let BatchRequest {
        store_dir,
        method,
        packages,
        symlinks: dep_links,
    } = req;
    let requests: Vec<Result<(ImportRequest, bool, Symlinks), ImportError>> = packages
        .into_par_iter()
        .zip(row_of.into_par_iter())
        .map(|(pkg, row_at)| {
            let (files, diff, symlinks) = match pkg.source {
                FilesSource::Map {
                    files,
                    side_effects,
                } => (
                    files,
                    pkg.side_effects_cache_key.as_ref().and_then(|k| {
                        side_effects
                            .into_iter()
                            .find(|(key, _)| key == k)
                            .map(|(_, d)| d)
                    }),
                    Symlinks::new(),
                ),
                FilesSource::IndexKey(key) => {
                    let rows = rows.as_ref().map_err(Clone::clone)?;
                    let bytes = row_at.and_then(|at| rows[at].lock().unwrap().take());
                    files_from_row(
                        store.as_ref().unwrap(),
                        bytes,
                        &files_dir,
                        &key,
                        pkg.side_effects_cache_key.as_deref(),
                    )?
                }
            };
            let is_built = diff.is_some();
            let files = match &diff {
                Some(d) => apply_side_effects(&files, d),
                None => files,
            };
            let request = ImportRequest {
                target_dir: pkg.target_dir,
                files,
                resolved_from: pkg.resolved_from,
                method: pkg.method.unwrap_or(method),
                will_be_built: !is_built && pkg.requires_build,
                force: pkg.force,
                keep_modules_dir: pkg.keep_modules_dir,
                disable_relink_local_dir_deps: pkg.disable_relink_local_dir_deps,
                safe_to_skip: pkg.safe_to_skip,
            };
            Ok((request, is_built, symlinks))
        })
        .collect();
    let mut order: Vec<usize> = (0..requests.len()).collect();
    order.sort_by_key(|&i| {
        std::cmp::Reverse(requests[i].as_ref().map_or(0, |(r, _, _)| r.files.len()))
    });
    let import_one = |i: usize| {
        let outcome = match &requests[i] {
            Ok((request, is_built, symlinks)) => import::import_package(&store_dir, request, stats)
                .and_then(|imported| {
                    place_symlinks(&request.target_dir, symlinks)?;
                    Ok(PackageOutcome {
                        is_built: *is_built,
                        imported,
                    })
                }),
            Err(e) => Err(e.clone()),
        };
        (i, outcome)
    };
    // `auto` decides on the first package it imports, by trying a clone and then a link and
    // undoing a failed try (directories made and removed again). Let the smallest package
    // pay for that, alone, instead of the biggest ones the pool would start with.
    let mut outcomes = Vec::with_capacity(order.len());
    if method == ImportMethod::Auto {
        if let Some(pos) = order.iter().rposition(|&i| {
            requests[i]
                .as_ref()
                .is_ok_and(|(r, _, _)| !r.files.is_empty())
        }) {
            outcomes.push(import_one(order.remove(pos)));
        }
    }
    outcomes.par_extend(order.par_iter().with_max_len(1).map(|&i| import_one(i)));
    outcomes.sort_by_key(|(i, _)| *i);
    let packages: Vec<_> = outcomes.into_iter().map(|(_, o)| o).collect();
    let import_ms = started.elapsed().as_secs_f64() * 1000.0;
    let started = Instant::now();
    let symlinks = if packages.iter().all(|p| p.is_ok()) {
        symlink_all_modules(&dep_links, stats)
    } else {
        Ok(())
    };
    BatchOutcome {
        packages,
        symlinks,
        import_ms,
        symlink_ms: started.elapsed().as_secs_f64() * 1000.0,
    }
}

#[cfg(test)] // batches read rows with `get_many` and call `files_from_row`
/// A package's file map (and the side-effects diff for `cache_key`, if the row has one) from
/// its index row. Blob paths are built as pnpm's readers build them:
/// `<storeDir>/files/<xx>/<rest>[-exec]`, executable when any x bit is set.
pub fn read_files(
    store: &store::Store,
    files_dir: &str,
    key: &str,
    cache_key: Option<&str>,
) -> Result<(FilesMap, Option<SideEffects>, Symlinks), ImportError> {
    let bytes = store
        .index
        .get(key)
        .map_err(|e| ImportError::with_code("ERR_PNPM_STORE_INDEX", e.message))?;
    files_from_row(store, bytes, files_dir, key, cache_key)
}

/// [`read_files`] for a row already read (`None`: the index has no row for `key`).
///
/// The side-effects diff's symlink entries (pnpm 11.28) are taken out of `added` and returned
/// as the package's symlinks; a diff whose symlinks pnpm would not restore is dropped, as if
/// the row had none for `cache_key` (see [`side_effects_of`]).
pub fn files_from_row(
    store: &store::Store,
    bytes: Option<Vec<u8>>,
    files_dir: &str,
    key: &str,
    cache_key: Option<&str>,
) -> Result<(FilesMap, Option<SideEffects>, Symlinks), ImportError> {
    let bytes = bytes.ok_or_else(|| {
        ImportError::with_code(
            "ERR_PNPM_MISSING_INDEX_ROW",
            format!(
                "The store index {}/index.db has no entry for {}",
                store.dir.display(),
                key.replace('\t', " ")
            ),
        )
    })?;
    let row = package_index::decode_row(&bytes).map_err(|e| {
        ImportError::with_code(
            "ERR_PNPM_STORE_INDEX",
            format!(
                "The store index entry for {} is unreadable: {e}",
                key.replace('\t', " ")
            ),
        )
    })?;
    let files = to_map(files_dir, key, row.files.iter())?;
    let diff = match (cache_key, &row.side_effects) {
        (Some(ck), Some(all)) => match all.iter().find(|(k, _)| k == ck) {
            Some((_, d)) => side_effects_of(files_dir, key, &files, d)?,
            None => None,
        },
        _ => None,
    };
    Ok(match diff {
        Some((diff, symlinks)) => (files, Some(diff), symlinks),
        None => (files, None, Symlinks::new()),
    })
}

fn to_map<'a>(
    files_dir: &str,
    key: &str,
    files: impl Iterator<Item = &'a (String, PackageFileInfo)>,
) -> Result<FilesMap, ImportError> {
    files
        .map(|(path, info)| Ok((path.clone(), blob_path(files_dir, key, path, info)?)))
        .collect()
}

const S_IFMT: u32 = 0o170000;

/// A side-effects diff as pnpm 11.28 reads it: symlink-mode entries become symlinks (target =
/// the blob's text) when every one is restorable (`normalize_target` keeps its text as is) and
/// no restored file or link lies below one of them; otherwise `None`, the diff is dropped (the
/// package is imported as if it had no side effects for this key). pnpm 11.28 never records
/// symlinks on Windows, so there any such entry drops the diff.
fn side_effects_of(
    files_dir: &str,
    key: &str,
    base: &FilesMap,
    d: &SideEffectsDiff,
) -> Result<Option<(SideEffects, Symlinks)>, ImportError> {
    let all = d.added.as_deref().unwrap_or(&[]);
    let is_link = |info: &PackageFileInfo| info.mode & S_IFMT == SYMLINK_MODE;
    let diff = SideEffects {
        added: to_map(files_dir, key, all.iter().filter(|(_, i)| !is_link(i)))?,
        deleted: d.deleted.clone().unwrap_or_default(),
    };
    let links: Vec<&(String, PackageFileInfo)> = all.iter().filter(|(_, i)| is_link(i)).collect();
    if links.is_empty() {
        return Ok(Some((diff, Symlinks::new())));
    }
    if cfg!(windows) {
        return Ok(None);
    }
    let mut symlinks = Symlinks::new();
    for (path, info) in links {
        let blob = blob_path(files_dir, key, path, info)?;
        let target = match fs::read(&blob) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(ImportError::os(&e, "open", &blob, None)),
        };
        if normalize_target(path, &target).as_deref() != Some(target.as_str()) {
            return Ok(None);
        }
        symlinks.push((path.clone(), target));
    }
    let links: HashSet<&str> = symlinks.iter().map(|(p, _)| p.as_str()).collect();
    let deleted: HashSet<&str> = diff.deleted.iter().map(String::as_str).collect();
    let restored = diff
        .added
        .iter()
        .map(|(p, _)| p.as_str())
        .chain(links.iter().copied())
        .chain(
            base.iter()
                .map(|(p, _)| p.as_str())
                .filter(|p| !deleted.contains(p)),
        );
    let below_a_link = |p: &str| {
        p.match_indices('/')
            .any(|(slash, _)| slash > 0 && links.contains(&p[..slash]))
    };
    if restored.into_iter().any(below_a_link) {
        return Ok(None);
    }
    Ok(Some((diff, symlinks)))
}

/// Creates (or corrects) a package's side-effects symlinks once its files are in place, as
/// pnpm 11.28's importer does: a right link is kept, anything else at the path is replaced. The
/// link paths are plain names inside `dir` (checked on reading); a path whose parent inside
/// `dir` is a symlink fails rather than write through it.
fn place_symlinks(dir: &Path, symlinks: &Symlinks) -> Result<(), ImportError> {
    for (rel, target) in symlinks {
        let dest = dir.join(rel);
        if fs::read_link(&dest).is_ok_and(|t| t.as_os_str() == std::ffi::OsStr::new(target)) {
            continue;
        }
        let mut parent = dir.to_path_buf();
        let segments: Vec<&str> = rel.split('/').collect();
        for segment in &segments[..segments.len() - 1] {
            parent.push(segment);
            match fs::symlink_metadata(&parent) {
                Ok(m) if m.file_type().is_symlink() => {
                    return Err(ImportError::linking_failed(format!(
                        "Cannot create the symlink {} below the symlink {}",
                        dest.display(),
                        parent.display()
                    )))
                }
                _ => {}
            }
        }
        if let Some(parent) = dest.parent() {
            fs::create_dir_all(parent).map_err(|e| ImportError::os(&e, "mkdir", parent, None))?;
        }
        let removed = match fs::symlink_metadata(&dest) {
            Ok(m) if m.is_dir() => fs::remove_dir_all(&dest),
            Ok(_) => fs::remove_file(&dest),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        };
        removed.map_err(|e| ImportError::os(&e, "rm", &dest, None))?;
        make_symlink(target, &dest)
            .map_err(|e| ImportError::os(&e, "symlink", Path::new(target), Some(&dest)))?;
    }
    Ok(())
}

#[cfg(unix)]
fn make_symlink(target: &str, dest: &Path) -> io::Result<()> {
    std::os::unix::fs::symlink(target, dest)
}

#[cfg(not(unix))]
fn make_symlink(_target: &str, _dest: &Path) -> io::Result<()> {
    // Never reached: symlink entries drop their side-effects diff where there are no symlinks.
    Err(io::Error::from(ErrorKind::Unsupported))
}

fn blob_path(
    files_dir: &str,
    key: &str,
    path: &str,
    info: &PackageFileInfo,
) -> Result<PathBuf, ImportError> {
    let d = &info.digest;
    if d.len() < 3 || !d.is_ascii() {
        return Err(ImportError::with_code(
            "ERR_PNPM_MISSING_CONTENT_DIGEST",
            format!(
                "The store index entry for {} has no digest for {path}",
                key.replace('\t', " ")
            ),
        ));
    }
    let mut blob = format!("{files_dir}/");
    crate::cas::push_blob_name(&mut blob, d, '/', crate::cas::is_executable(info.mode));
    Ok(PathBuf::from(blob))
}

/// The counts of a call, as plain numbers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counts {
    pub packages_imported: u64,
    pub packages_skipped: u64,
    pub files_linked: u64,
    pub files_copied: u64,
    pub files_cloned: u64,
    pub dirs_made: u64,
    pub symlinks: u64,
}

impl Counts {
    pub fn of(stats: &Stats) -> Self {
        Counts {
            packages_imported: Stats::get(&stats.packages_imported),
            packages_skipped: Stats::get(&stats.packages_skipped),
            files_linked: Stats::get(&stats.files_linked),
            files_copied: Stats::get(&stats.files_copied),
            files_cloned: Stats::get(&stats.files_cloned),
            dirs_made: Stats::get(&stats.dirs_made),
            symlinks: Stats::get(&stats.symlinks),
        }
    }
}

#[cfg(test)]
mod tests;
