//! The body of every async export runs on a pool thread through [`catch_panic`], so that a bug
//! becomes a rejected promise with a message instead of aborting the Node process.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

/// Runs `work`; a panic inside it comes back as `Err("internal error while <task>: <detail>")`.
///
/// Fault injection for the test suite: with `CAS_NATIVE_INJECT_PANIC=<task>` in the
/// environment, that task panics on purpose before doing anything, which is the only way to
/// prove the path from a Rust panic to a rejected promise without a real bug.
pub(super) fn catch_panic<T>(task: &str, work: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(|| {
        if injected_panic().is_some_and(|t| t == task) {
            panic!("CAS_NATIVE_INJECT_PANIC={task}");
        }
        work()
    }))
    .map_err(|payload| {
        let detail = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        format!("internal error while {task}: {detail}")
    })
}

fn injected_panic() -> Option<&'static str> {
    static TASK: OnceLock<Option<String>> = OnceLock::new();
    TASK.get_or_init(|| std::env::var("CAS_NATIVE_INJECT_PANIC").ok())
        .as_deref()
}
