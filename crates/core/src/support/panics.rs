//! A panic on a worker thread turned into a message, so that a bug in this crate becomes an
//! error its caller can report instead of a thread (or a Node process) gone.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

/// Runs `work`; a panic inside it comes back as `Err("internal error while <task>: <detail>")`.
///
/// Fault injection for the test suites: with `CAS_NATIVE_INJECT_PANIC=<task>` in the
/// environment, that task panics on purpose before doing anything, which is the only way to
/// prove the path from a panic to a reported error without a real bug.
pub fn catch_panic<T>(task: &str, work: impl FnOnce() -> T) -> Result<T, String> {
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

#[cfg(test)]
mod tests {
    use super::catch_panic;

    #[test]
    fn a_panic_becomes_its_message() {
        let caught = catch_panic("testing", || -> u8 { panic!("boom") });
        assert_eq!(
            caught,
            Err("internal error while testing: boom".to_string())
        );
        assert_eq!(catch_panic("testing", || 7), Ok(7));
    }
}
