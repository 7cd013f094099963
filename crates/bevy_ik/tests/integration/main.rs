//! The plugin's integration tests, one module per topic, in one test binary: each test binary
//! links Bevy, so one binary instead of sixteen saves that link and the monomorphised Bevy code
//! fifteen times over (the README's "Build budget"). `tests/warnings.rs` stays a binary of its
//! own: it installs a process-wide log subscriber to count warnings, which other tests running in
//! the same process would write to. Modules whose feature is off compile to nothing (each
//! starts with its `#![cfg(feature = …)]`).

mod common;

mod balance;
mod behaviours;
mod debug_draw;
mod first_scene;
mod gltf_characters;
mod grip;
mod grounding;
mod humanoid;
mod limb;
mod limb_batch;
mod rig;
mod scene;
mod secondary;
mod serde;
mod stack;
mod vr;
mod vr_gltf;
