//! Batched analytic limbs: a character whose stack *starts* with independent two-bone stages
//! (a humanoid's four limbs, say) solves them together through ik-core's
//! [`LimbBatch`] — four limbs per SIMD vector — and then the rest of its stack as usual.
//!
//! # When
//!
//! Each character's batch is built with its stack (set-up): the leading run of two-bone
//! stages in which no stage reads a bone an earlier one of the run writes (its own bones and
//! its root's ancestors), at least two, no twist bones between root, mid and tip
//! ([`IkCharacter::batched_limbs`](crate::IkCharacter::batched_limbs)). Whether the plugin
//! uses the batches is [`IkPlugin::with_batched_limbs`](crate::IkPlugin::with_batched_limbs):
//! by default from [`IkPlugin::BATCHED_LIMBS_MIN_CHARACTERS`](crate::IkPlugin::BATCHED_LIMBS_MIN_CHARACTERS)
//! characters with a batch on ([`use_batch`], counted every frame), one by one below that —
//! the batch is cheaper per character at any count, but a scene of a few characters keeps
//! the scalar solve's exact results for microseconds a frame.
//!
//! # Semantics kept
//!
//! Those of the stack's own solve, stage by stage (ik-core's [`LimbBatch`] docs): a disabled
//! stage skipped, the weight blended, a rejected limb left at its input with the error as its
//! status, each stage's outcome recorded — so statuses, weights and stage order are those of
//! the scalar path. Goals, settings and weights stay per-frame parameters: the gather writes
//! each batched limb's goal into the stage and into the batch's lanes
//! ([`LimbBatch::set_goal`]); a limb whose settings changed rebuilds the batch (rare,
//! allocates); one whose bone lengths animation changed updates its lane. The test
//! `tests/limb_batch.rs` holds the batched plugin to the scalar one within 1e-5 of the limb
//! length on every joint, and checks the default rule.
//!
//! # Granularity
//!
//! One batch per character, solved in that character's task while its data is in cache: the
//! four limbs of a humanoid fill one vector exactly. Packing many characters' limbs into one
//! call would add two passes over every character (copy the goals out, the results back) for
//! the same lanes.
//!
//! # Measured
//!
//! Instruction counts (callgrind; load-insensitive), per character and frame of four limbs
//! with orientation goals and poles:
//!
//! - ik-core's `stack_limbs` bench (256 characters of the Mixamo test rig, the solve alone):
//!   one by one (`IkStack::solve`) about 6,270 instructions, batched about 4,360 (kernel
//!   1,545, the prefix's forward kinematics 1,116 — paid by both paths — and the hand-over
//!   1,700). The earlier hand-over, each limb through `IkStack::solve_stage_with` with its
//!   save, blend pass and `PoseBuffer::set_local` calls, cost about 2,400 more.
//! - The crowd bench (`IK_CROWD=200`, `IK_MODES=…`; set-up plus 32 frames): see the crate
//!   README's performance table for the figures of this release.
//!
//! The kernel is about 390 instructions a limb against 930 for the scalar
//! `TwoBoneIk::solve_with_parent` plus 450 of the stack's per-stage save, blend and outcome.

pub(crate) use ik_core::stack::LimbBatch;

use crate::IkPlugin;

/// Whether the plugin's default rule batches, with `batchable` characters having a batch.
pub(crate) fn use_batch(batchable: usize) -> bool {
    batchable >= IkPlugin::BATCHED_LIMBS_MIN_CHARACTERS
}
