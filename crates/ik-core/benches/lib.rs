//! The benchmarks of `ik-core`, a package of their own (see its `Cargo.toml`): run one with
//! `cargo bench -p ik-core-benches --bench NAME`. This library is empty; the benchmarks are the
//! `[[bench]]` targets beside it.
