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
//! # Or as one stage
//!
//! [`IkLimbBatch`](crate::IkLimbBatch) asks for the same kernel explicitly: one stage entity
//! describing a run of limbs (ik-core's [`LimbBatchStage`](ik_core::stack::LimbBatchStage)),
//! registered as a stage kind like the other built-ins, whatever the number of characters. The
//! stack's own rules apply to it as to any stage (one save, blend and outcome for the run, one
//! [`IkStatus`](crate::IkStatus) with a residual per limb) instead of this module's per-limb
//! hand-over.
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
//! `tests/integration/limb_batch.rs` holds the batched plugin to the scalar one within 1e-5 of the limb
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
//! Instruction counts (valgrind callgrind: load-insensitive; the machine's wall clock, shared
//! and loaded 5–7 by other builds, could not resolve the difference), per character and frame
//! of four limbs:
//!
//! - The crowd bench, 200 characters (`IK_CROWD=200 IK_MODES=… --bench zzz`: set-up plus 32
//!   frames), the per-character task `solve_character` (gather, solve, summary): one by one
//!   11,820 instructions; batched 10,040 (the previous batch hand-over, each limb through
//!   `IkStack::solve_stage_with`: 12,140). Of these, the stack's solve: one by one 5,750
//!   (`IkStack::solve_from`), batched 3,510 (`LimbBatch::solve`: the kernel 1,380, the
//!   parent frames' forward kinematics 490, the hand-over 1,640).
//! - ik-core's `stack_limbs` bench (256 Mixamo test-rig characters, orientation goals and
//!   poles, the solve alone): `IkStack::solve` 6,730, `LimbBatch::solve` 4,360 (kernel 1,545,
//!   forward kinematics 1,116, hand-over 1,700).
//!
//! - [`IkLimbBatch`](crate::IkLimbBatch), the same kernel as one stage (the crowd bench's
//!   `limbs_stage` mode, 200 characters, 32 frames; inclusive instructions of
//!   `solve_character` per call, measured on 9569d6f): 10,350, against 10,710 for this
//!   module's batch (`limbs_batched`) and 12,700 one by one (`limbs_one_by_one`) in the same
//!   build. The wall clock (1000 characters, three alternating runs, load 6–8) spread 4–25 ms
//!   a frame for every mode and could not rank them.
//!
//! Per limb: the kernel about 350–390 instructions and the hand-over about 410, against 930
//! for the scalar `TwoBoneIk::solve_with_parent` and 450 for the stack's per-stage save, blend
//! pass and outcome around it.

pub(crate) use ik_core::stack::LimbBatch;

use crate::IkPlugin;

/// Whether the plugin's default rule batches, with `batchable` characters having a batch.
pub(crate) fn use_batch(batchable: usize) -> bool {
    batchable >= IkPlugin::BATCHED_LIMBS_MIN_CHARACTERS
}
