//! Every integration test of ik-core, in one test binary.
//!
//! Each file in `tests/` is a module of this crate (the files stay where they are, so
//! `--test all NAME::` selects one of them: `cargo test -p ik-core --test all fuzz::`).
//! One binary instead of one per file: the crate, its dependencies and the support modules are
//! linked once, not 35 times (README, "Build times"). `autotests = false` in the
//! manifest; [`every_test_file_is_a_module`] fails when a file in `tests/` is not listed here.
//!
//! The support modules shared by several files live at the crate root, once: the counting
//! allocator must be a single one (its counters are this binary's), and the grounding course
//! names the gameplay rigs by `crate::gameplay`.

#[path = "support/alloc.rs"]
mod alloc;
#[path = "support/chains.rs"]
mod chains;
#[path = "support/gameplay.rs"]
mod gameplay;
#[path = "support/grounding.rs"]
mod grounding_course;
/// jacobian_common: the Jacobian tests' shared rigs.
mod jacobian_common;
#[path = "support/rng.rs"]
mod rng;
#[path = "support/vr_recording.rs"]
mod vr_recording;

/// The binary's allocator: counts allocations on the threads that ask (`alloc::allocations_during`);
/// only the tests of "no allocation per solve" ask.
#[global_allocator]
static GLOBAL: alloc::Counting = alloc::Counting;

#[path = "analytic.rs"]
mod analytic;
#[path = "analytic_batch.rs"]
mod analytic_batch;
#[path = "behaviours.rs"]
mod behaviours;
#[path = "behaviours_alloc.rs"]
mod behaviours_alloc;
#[path = "chain_ik.rs"]
mod chain_ik;
#[path = "chain_proptest.rs"]
mod chain_proptest;
#[path = "chains_alloc.rs"]
mod chains_alloc;
#[path = "detached_feet.rs"]
mod detached_feet;
#[path = "full_body.rs"]
mod full_body;
#[path = "full_body_alloc.rs"]
mod full_body_alloc;
#[path = "full_body_robustness.rs"]
mod full_body_robustness;
#[path = "full_body_tracking.rs"]
mod full_body_tracking;
#[path = "fuzz.rs"]
mod fuzz;
#[path = "gameplay_finish.rs"]
mod gameplay_finish;
#[path = "gameplay.rs"]
mod gameplay_tests;
#[path = "grip.rs"]
mod grip;
#[path = "grounding.rs"]
mod grounding;
#[path = "grounding_alloc.rs"]
mod grounding_alloc;
#[path = "hostile_input.rs"]
mod hostile_input;
#[path = "humanoid_mapping.rs"]
mod humanoid_mapping;
#[path = "jacobian_alloc.rs"]
mod jacobian_alloc;
#[path = "jacobian_arm.rs"]
mod jacobian_arm;
#[path = "jacobian_proptest.rs"]
mod jacobian_proptest;
#[path = "jacobian_solver.rs"]
mod jacobian_solver;
#[path = "robustness.rs"]
mod robustness_tests;
#[path = "rotation.rs"]
mod rotation;
#[path = "spline_velocity.rs"]
mod spline_velocity;
#[path = "spring.rs"]
mod spring;
#[path = "stack.rs"]
mod stack;
#[path = "stack_alloc.rs"]
mod stack_alloc;
#[path = "stack_final.rs"]
mod stack_final;
#[path = "stack_limbs.rs"]
mod stack_limbs;
#[path = "vr_body.rs"]
mod vr_body;
#[path = "vr_body_alloc.rs"]
mod vr_body_alloc;
#[path = "vr_demo_script.rs"]
mod vr_demo_script;

/// Every `tests/*.rs` file is compiled: a file missing from the list above would never run
/// (`autotests = false`).
#[test]
fn every_test_file_is_a_module() {
    let listed = include_str!("all.rs");
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("tests/ is readable") {
        let name = entry
            .expect("a directory entry")
            .file_name()
            .to_string_lossy()
            .into_owned();
        if name.ends_with(".rs")
            && name != "all.rs"
            && !listed.contains(&format!("#[path = \"{name}\"]"))
        {
            missing.push(name);
        }
    }
    assert!(
        missing.is_empty(),
        "test files not compiled into tests/all.rs: {missing:?}"
    );
}
