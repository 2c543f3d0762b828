//! Dependency links: `symlinkAllModules` puts each dependency of a package into its
//! `node_modules` as a relative directory symlink (a junction on Windows), as pnpm's
//! `symlink-dir` does (docs/store-format.md, "Linking into node_modules").

use std::ffi::OsString;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use rayon::prelude::*;

use crate::error_code::ErrorCode;
use crate::import::{self, rename_overwrite, ImportError, Stats};
use crate::js::{self, relative, resolve};
use crate::{os_error, platform};

/// One package of `symlinkAllModules`: link each child into `modules` under its alias.
#[derive(Debug, Clone)]
pub struct SymlinkDep {
    /// Alias → absolute directory of the package the link points to, in object key order.
    pub children: Vec<(String, PathBuf)>,
    pub modules: PathBuf,
    /// The package's own name: a child with this alias is a self-reference and is skipped.
    pub name: String,
}

/// A failure of `symlinkAllModules` or `hardLinkDir`, with pnpm's full code: `ERR_PNPM_<errno>`
/// for a filesystem error, else the operation's (`ERR_PNPM_SYMLINK_FAILED`,
/// `ERR_PNPM_INVALID_DEPENDENCY_NAME`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct LinkError {
    /// Read through [`ErrorCode::code`], the one way codes are exposed.
    code: &'static str,
    pub message: String,
    pub site: Option<Box<crate::os_error::FsSite>>,
}

/// pnpm's code for a dependency link that failed without an OS error.
pub const SYMLINK_FAILED: &str = "ERR_PNPM_SYMLINK_FAILED";

impl LinkError {
    pub fn symlink_failed(message: impl Into<String>) -> Self {
        LinkError {
            code: SYMLINK_FAILED,
            message: message.into(),
            site: None,
        }
    }
}

impl ErrorCode for LinkError {
    fn code(&self) -> &'static str {
        self.code
    }

    fn site(&self) -> Option<crate::os_error::FsSite> {
        self.site.as_deref().cloned()
    }
}

impl From<ImportError> for LinkError {
    fn from(e: ImportError) -> Self {
        LinkError {
            code: e.code(),
            message: e.message,
            site: e.site,
        }
    }
}

pub(crate) fn os_err(e: &io::Error, syscall: &str, path: &Path, dest: Option<&Path>) -> LinkError {
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
        code: "ERR_PNPM_INVALID_DEPENDENCY_NAME",
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

/// The aliases of `aliases` that pnpm refuses as dependency names ([`valid_for_old_packages`]),
/// in order.
pub fn invalid_aliases(aliases: Vec<String>) -> Vec<String> {
    aliases
        .into_iter()
        .filter(|alias| !valid_for_old_packages(alias))
        .collect()
}

/// validate-npm-package-name 7's `validForOldPackages` (errors only; warnings such as capitals,
/// builtin names or length are allowed).
pub fn valid_for_old_packages(name: &str) -> bool {
    if name.is_empty() || name.starts_with('.') || name.starts_with('-') || name.starts_with('_') {
        return false;
    }
    if js::trim(name) != name {
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

/// symlink-dir's sync semantics: a relative `dir` symlink at `link` pointing to `target` (on
/// Windows a junction with the absolute target, as symlink-dir makes it there).
/// Returns whether a link was created (`false`: the right link was already there).
pub fn symlink_dir(target: &Path, link: &Path, stats: &Stats) -> Result<bool, LinkError> {
    let target = resolve(target);
    let link = resolve(link);
    if target == link {
        return Err(LinkError::symlink_failed(format!(
            "Symlink path is the same as the target path ({})",
            target.display()
        )));
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

#[cfg(test)]
mod tests;
