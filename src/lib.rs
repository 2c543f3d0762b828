//! `@cas/native`: the napi crate. All the store work is in `cas-native-core` (`crates/core`),
//! plain Rust that knows nothing of Node; [`binding`] only converts between the two.
#![deny(clippy::all)]

mod binding;
