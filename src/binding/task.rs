//! The body of every async export runs on a pool thread through [`catch_panic`], so that a bug
//! becomes a rejected promise with a message instead of aborting the Node process.
//! [`spawn_settled`] is the whole round trip for an export that answers with one value: a
//! deferred promise, the work on a pool, a panic turned into [`panic_error`], the promise settled.

use napi::bindgen_prelude::{Object, ToNapiValue};
use napi::Env;
use rayon::ThreadPool;

use super::error::NativeError;
pub(super) use cas_native_core::panics::catch_panic;

/// The code of a panic: a bug in this addon, not a problem with the package, store or
/// arguments, so it has a code of its own rather than the operation's usual failure code.
pub(super) const PANIC_CODE: &str = "ERR_PNPM_CAS_NATIVE_PANIC";

/// A panic's message (from [`catch_panic`]) as the error JS sees.
pub(super) fn panic_error(message: String) -> NativeError {
    NativeError::new(PANIC_CODE, message)
}

type Resolver<T> = Box<dyn FnOnce(Env) -> napi::Result<T> + Send>;

/// Runs `work` on `pool` and resolves the returned promise with its value; a panic resolves it
/// with `on_panic(panic_error(..))` instead (the exports never reject: failures are data).
pub(super) fn spawn_settled<'env, T, W, P>(
    env: &'env Env,
    pool: &ThreadPool,
    task: &'static str,
    work: W,
    on_panic: P,
) -> napi::Result<Object<'env>>
where
    T: ToNapiValue + Send + 'static,
    W: FnOnce() -> T + Send + 'static,
    P: FnOnce(NativeError) -> T + Send + 'static,
{
    let (deferred, promise) = env.create_deferred::<T, Resolver<T>>()?;
    pool.spawn(move || {
        let value = catch_panic(task, work).unwrap_or_else(|m| on_panic(panic_error(m)));
        deferred.resolve(Box::new(move |_env| Ok(value)));
    });
    Ok(promise)
}
