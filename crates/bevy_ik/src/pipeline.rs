//! The one per-frame pipeline every character goes through: gather its input pose and its
//! stages' goals once and solve its stack in order, characters in parallel
//! (`solve_characters`), write the bones once (`write_bone_transforms`, the only
//! system that writes `Transform`s) and publish each stage's status where it changed (a stage
//! on the character's own entity in the character's task, the others in
//! `publish_ik_status`).
//!
//! # The input pose
//!
//! A bone's input is what animation left in its `Transform` this frame. When nothing rewrote
//! the bone since the plugin wrote it (its `Transform` still equals what was written last
//! frame), the input is the one remembered from before the plugin's write. Rotation and
//! translation are judged each on its own: a clip that keys only a bone's translation (the
//! CC0 robot's `Idle` keys its body's, whose rotation the full body writes) leaves in the
//! rotation what the plugin wrote, which is not input — read as input, the body's last
//! rotation became the next frame's input and the body kept it with IK faded out. So a character
//! without animation solves from the same input every frame, and an IK/FK weight of 0.5 stays
//! 0.5 instead of creeping toward 1 by reading its own output back (Godot restores the
//! pre-modifier pose every frame for the same reason). A bone whose output equals its input is
//! not written; one that was written last frame but not this frame gets its input back.
//! What was written is not copied: it is the stack's output, still in its pose buffer until
//! the next frame's input goes in, so the plugin keeps one flag a bone
//! (`Runtime::written`).
//!
//! # Cost in a crowd
//!
//! With a thousand characters every character's state is cold in cache each frame, so the
//! pipeline's cost is as much the cache lines it touches as its instructions (measured with
//! callgrind's cache simulation and in alternating crowd-bench runs, see README's performance
//! table). Hence: one written flag a bone instead of a copy of the transform; a limb's
//! settings compared in its per-stage record, not in the stage's cold solver; a target's
//! local transform and parent read in one lookup; the per-stage records laid out with what the
//! status pass reads first and the residuals inline; a stage's component read once a frame
//! (its weight and goals together, two type-id look-ups; its markers by component ids cached
//! at start-up: reading it for each question cost about 17 look-ups a stage, +45 % CPU in the
//! four-limb crowd); a few batches a thread for the parallel
//! passes, so a thread that starts late does not hold the frame; a character switched off
//! ([`IkDisabled`]) whose bones already have their input back is skipped outright (a crowd's
//! far characters cost nothing). Tried and not kept: asking
//! the CPU to prefetch the next character's state (its heap blocks and its bones' and targets'
//! components) while one is solved — in alternating runs the hints cost more than the overlap
//! won. Also tried: writing each stage's status from its character's task (an `unsafe`
//! unchecked lookup, sound because a stage's `IkStageOf` names one character): four-limb
//! crowd median 2.10 ms against 2.20 ms with the status pass, the previous single-purpose limb
//! pipeline 1.77 ms in the same seven alternating runs; with no status pass at all 1.99 ms
//! against its 1.86 ms. The pass is about half the gap, not worth giving up
//! `forbid(unsafe_code)`; the rest is the character pose buffer's memory traffic (callgrind:
//! the stack runs fewer instructions per character than those limbs, about 10.7 k against
//! 13.9 k, but touches more cache lines). Without `unsafe`, the character's task does
//! publish the status of a stage on the character's own entity (the query that hands it the
//! character hands it that entity's `IkStatus` too): a humanoid's full body, whose status
//! the separate pass found cold in cache again (docs/benchmarks.md has the figures).

use bevy::ecs::batching::BatchingStrategy;
use bevy::ecs::change_detection::{DetectChangesMut, Mut};
use bevy::ecs::entity::Entity;
use bevy::ecs::query::{Has, Without};
use bevy::ecs::resource::Resource;
use bevy::ecs::system::{Query, Res};
use bevy::log::warn;
use bevy::math::Vec3;
use bevy::platform::time::Instant;
use bevy::transform::components::Transform;
use ik_core::stack::StageOutcome;

use crate::balance::IkCenterOfMass;
use crate::character::{BatchableCharacters, IkCharacter, Runtime, StageRt, Summary};
use crate::components::{IkDisabled, IkSolveTime, IkStatus};
use crate::error::IkError;
use crate::kind::{IkGatherContext, IkStageKinds, IkStageSummary, StageEntities};
use crate::limb_batch;
use crate::pose_io::{self, CurrentTransforms, TargetReader};
use crate::stage::IkStageOf;

/// How the pipeline solves (set with [`IkPlugin`](crate::IkPlugin)'s builder).
#[derive(Resource, Clone, Copy, Debug, Default)]
pub(crate) struct IkPipelineSettings {
    /// Solve each character's leading independent limbs in one batch (see
    /// [`crate::limb_batch`]); `None`: when enough characters can
    /// ([`limb_batch::use_batch`]).
    pub(crate) batch_limbs: Option<bool>,
}

fn gather(
    rt: &mut Runtime,
    disabled: bool,
    batching: bool,
    (descs, kinds): (&StageEntities, &IkStageKinds),
    current: &CurrentTransforms,
) {
    rt.solved = false;
    rt.batched_now = 0;
    rt.frame_error = None;
    for st in &mut rt.stages {
        st.frame_error = None;
        st.summary = None;
    }
    // Read even when switched off: the bones the plugin wrote get back this frame's input
    // (what animation wrote just now), not last frame's.
    if let Err(err) = read_input(rt, &current.transforms) {
        rt.frame_error = Some(err);
        return;
    }
    if disabled {
        return;
    }
    let reader = TargetReader {
        queries: current,
        frame: rt.frame,
    };
    let model = match pose_io::model_space(&current.helper, rt.frame) {
        Ok(m) => m,
        Err(err) => {
            rt.frame_error = Some(err);
            return;
        }
    };
    let Runtime {
        stack,
        stages,
        input,
        entities,
        batch,
        ..
    } = rt;
    if let Err(err) = stack.set_input(input) {
        rt.frame_error = Some(IkError::Solver(err.into()));
        return;
    }
    // The batched limbs' goals go straight into the batch's lanes.
    let mut batch = batch.as_mut().filter(|_| batching);
    let (skeleton, buffer, slots) = stack.parts_mut();
    for st in stages.iter_mut() {
        let Some((index, slot)) = st.slot.and_then(|i| Some((i, slots.get_mut(i)?))) else {
            continue;
        };
        let Ok(item) = descs.get(st.entity) else {
            slot.enabled = false;
            continue;
        };
        // `IkDisabled` on a stage entity switches that stage off (on the character entity,
        // the whole character, handled above).
        let (disabled, keep_goals) = kinds.markers(&item);
        let mut cx = IkGatherContext {
            skeleton,
            buffer,
            model: &model,
            reader: &reader,
            entities,
        };
        // The kind's component is read once: its weight, and its goals when enabled.
        let frame = kinds.frame(
            st.kind,
            &item,
            !disabled,
            &mut slot.stage,
            &mut st.state,
            &mut cx,
        );
        // `None`: the entity no longer describes a stage of this kind; set-up rebuilds it.
        let Some((weight, result)) = frame else {
            slot.enabled = false;
            continue;
        };
        slot.enabled = !disabled;
        slot.keep_goals = keep_goals;
        slot.weight = weight;
        if disabled {
            continue;
        }
        match result {
            Ok(()) => {
                if let Some(b) = batch.as_deref_mut().filter(|b| index < b.len())
                    && let Some(stage) = slot.stage.as_two_bone()
                {
                    b.set_goal(index, &stage.goal);
                }
            }
            Err(err) => {
                slot.enabled = false;
                st.frame_error = Some(err);
            }
        }
    }
}

/// Reads the bones' local transforms into the remembered input pose (see the module docs).
fn read_input(rt: &mut Runtime, transforms: &Query<&Transform>) -> Result<(), IkError> {
    let Runtime {
        entities,
        first,
        written,
        input,
        stack,
        ..
    } = rt;
    // Last frame's output, which is what the plugin wrote (see `Runtime::written`).
    let last = stack.pose();
    for i in *first..entities.len() {
        let e = entities[i];
        let t = transforms
            .get(e)
            .map_err(|_| IkError::MissingBoneEntity(e))?;
        if !(t.translation.is_finite() && t.rotation.is_finite()) {
            return Err(IkError::NonFinitePose);
        }
        // Each channel on its own: a clip may key only a bone's translation (or only its
        // rotation), and the channel it leaves still holds what the plugin wrote.
        let rotation_kept = written[i] && last.rotations[i] == t.rotation;
        let translation_kept = written[i] && last.translations[i] == t.translation;
        if !rotation_kept {
            input.rotations[i] = t.rotation;
        }
        if !translation_kept {
            input.translations[i] = t.translation;
        }
        // A bone still holding part of the plugin's write stays written, so that it gets its
        // input back when the plugin stops writing it.
        written[i] = rotation_kept || translation_kept;
    }
    Ok(())
}

/// Per character, in parallel: reads its input pose (one pass over its bones), the model-space
/// frame and each stage's goals, then solves its stack (the stages in order) and summarises
/// each stage's outcome — in one pass, while the character's data is in cache.
#[allow(clippy::type_complexity, reason = "system parameters")]
pub(crate) fn solve_characters(
    mut characters: Query<
        (
            Entity,
            &mut IkCharacter,
            Has<IkDisabled>,
            Option<&mut IkSolveTime>,
            Option<(&mut IkStatus, Option<&mut IkCenterOfMass>)>,
        ),
        Without<IkStageOf>,
    >,
    descs: StageEntities,
    kinds: Res<IkStageKinds>,
    current: CurrentTransforms,
    settings: Res<IkPipelineSettings>,
    batchable: Res<BatchableCharacters>,
) {
    let batching = settings
        .batch_limbs
        .unwrap_or_else(|| limb_batch::use_batch(batchable.0));
    characters
        .par_iter_mut()
        .batching_strategy(balanced())
        .for_each(|(entity, mut character, disabled, timing, own)| {
            // A character switched off whose last pass left nothing to undo costs nothing (a
            // crowd's far characters, say): not even a change tick.
            if disabled && character.rt.as_ref().is_some_and(|rt| rt.idle) {
                return;
            }
            let Some(rt) = character.rt.as_mut() else {
                return;
            };
            let started = (timing.is_some() && !disabled).then(Instant::now);
            solve_character(entity, rt, disabled, batching, (&descs, &kinds), &current);
            plan_writes(rt);
            rt.idle = disabled && rt.to_write.is_empty();
            if let (Some(started), Some(mut timing)) = (started, timing) {
                timing.last = started.elapsed();
            }
            // The status of a stage on the character's own entity (a humanoid's full body) is
            // published here, while the character is in cache; `publish_ik_status` does the
            // stages on other entities.
            if let Some((mut status, mut com)) = own
                && !disabled
            {
                publish_stage(entity, rt, &mut status, com.as_mut());
            }
        });
}

/// A few batches a thread (Bevy's default is one): a thread that starts late, or is
/// interrupted, then leaves the others batches to take instead of the frame waiting for its
/// half of the characters.
fn balanced() -> BatchingStrategy {
    BatchingStrategy::new().batches_per_thread(4)
}

fn solve_character(
    entity: Entity,
    rt: &mut Runtime,
    disabled: bool,
    batching: bool,
    descs: (&StageEntities, &IkStageKinds),
    current: &CurrentTransforms,
) {
    gather(rt, disabled, batching, descs, current);
    if disabled {
        return;
    }
    if let Some(err) = &rt.frame_error {
        warn_once(&mut rt.warned, entity, err);
        return;
    }
    let first = match rt.batch.as_mut().filter(|_| batching) {
        Some(batch) => batch.solve(&mut rt.stack),
        None => 0,
    };
    rt.batched_now = first;
    rt.stack.solve_from(first);
    rt.solved = true;
    summarise(rt, descs.1);
}

/// Decides, still in the character's task, which bones [`write_bone_transforms`] writes this
/// frame — those whose output differs from their input, and those the plugin wrote last frame
/// (they get their input back) — and records what it will have written (the remembered input,
/// see the module docs). A character whose pose could not be read is not written.
fn plan_writes(rt: &mut Runtime) {
    rt.to_write.clear();
    if rt.frame_error.is_some() {
        return;
    }
    let output = rt.stack.pose();
    for i in rt.first..rt.entities.len() {
        let (input_q, input_t) = (rt.input.rotations[i], rt.input.translations[i]);
        let (q, t) = if rt.solved {
            (output.rotations[i], output.translations[i])
        } else {
            (input_q, input_t)
        };
        let changed = q != input_q || t != input_t;
        if !changed && !rt.written[i] {
            continue;
        }
        rt.to_write.push(i);
        rt.written[i] = changed;
    }
}

/// Turns the stack's per-stage outcomes into status summaries (and measures what the reports
/// do not: a limb's tip rotation, the centre of mass of the output pose).
fn summarise(rt: &mut Runtime, kinds: &IkStageKinds) {
    let Runtime { stack, stages, .. } = rt;
    let (skeleton, buffer, slots) = stack.parts_mut();
    for st in stages.iter_mut() {
        let Some(slot) = st.slot.and_then(|i| slots.get_mut(i)) else {
            continue;
        };
        let report = match &slot.outcome {
            StageOutcome::Solved(r) => *r,
            StageOutcome::Failed(e) => {
                if st.frame_error.is_none() {
                    st.frame_error = Some(match e {
                        ik_core::stack::StackError::NonFiniteWeight => IkError::InvalidSettings(
                            ik_core::stack::StackError::NonFiniteWeight.into(),
                        ),
                        other => IkError::Solver(other.clone().into()),
                    });
                }
                warn_stage(st);
                continue;
            }
            StageOutcome::Disabled | StageOutcome::Faded | StageOutcome::NotRun => {
                warn_stage(st);
                continue;
            }
        };
        st.residuals.clear();
        let (position_residual, rotation_residual) =
            (report.position_residual(), report.angle_residual());
        let mut summary = IkStageSummary {
            skeleton,
            buffer,
            report,
            position_residual,
            rotation_residual,
            residuals: &mut st.residuals,
            center_of_mass_residual: 0.0,
            center_of_mass: None,
        };
        kinds.summarise(st.kind, &mut slot.stage, &st.state, &mut summary);
        st.center_of_mass = summary.center_of_mass;
        st.summary = Some(Summary {
            converged: report.converged(),
            iterations: report.iterations(),
            position_residual: summary.position_residual,
            rotation_residual: summary.rotation_residual,
            center_of_mass_residual: summary.center_of_mass_residual,
            final_position_residual: slot
                .final_residual
                .map_or(position_residual, |r| r.position),
            final_rotation_residual: slot.final_residual.map_or(rotation_residual, |r| r.angle),
            goals_moved: slot.goals_moved,
        });
    }
}

fn warn_stage(st: &mut StageRt) {
    if let Some(err) = &st.frame_error {
        warn_once(&mut st.warned, st.entity, err);
    }
}

/// Writes every character's output pose to its bones' `Transform`s (`set_if_neq`): the only
/// system that writes bone transforms. Only the bones [`plan_writes`] chose are touched: those
/// the stack changed, and those written last frame but not changed now (they get their input
/// back, as does every bone the plugin had written on a character not solved this frame).
/// It reads the characters only, so it runs beside [`publish_ik_status`].
pub(crate) fn write_bone_transforms(
    characters: Query<&IkCharacter, Without<IkStageOf>>,
    mut transforms: Query<&mut Transform>,
) {
    for character in &characters {
        let Some(rt) = character.rt.as_ref() else {
            continue;
        };
        let output = if rt.solved {
            rt.stack.pose()
        } else {
            &rt.input
        };
        for &i in &rt.to_write {
            if let Ok(mut tr) = transforms.get_mut(rt.entities[i]) {
                let new = Transform {
                    rotation: output.rotations[i],
                    translation: output.translations[i],
                    ..*tr
                };
                tr.set_if_neq(new);
            }
        }
    }
}

/// Writes the [`IkStatus`] (and a balanced humanoid's [`IkCenterOfMass`]) of each stage on
/// an entity of its own ([`IkStageOf`]) from its character's last solve, touching them only
/// when a value changed. A stage on the character's entity is published by
/// [`solve_characters`] in the character's task (a second pass over a crowd's characters
/// would find each of them cold in cache again).
#[allow(clippy::type_complexity, reason = "system parameters")]
pub(crate) fn publish_ik_status(
    mut stages: Query<(
        Entity,
        &mut IkStatus,
        &IkStageOf,
        Option<&mut IkCenterOfMass>,
    )>,
    characters: Query<(&IkCharacter, Has<IkDisabled>)>,
) {
    stages
        .par_iter_mut()
        .batching_strategy(balanced())
        .for_each(|(entity, mut status, of, mut com)| {
            let Ok((ch, disabled)) = characters.get(of.0) else {
                return;
            };
            let Some(rt) = ch.rt.as_ref().filter(|_| !disabled) else {
                return;
            };
            publish_stage(entity, rt, &mut status, com.as_mut());
        });
}

/// Writes the status (and centre of mass) of `rt`'s stage on `entity`, if it has one, from
/// the last solve.
fn publish_stage(
    entity: Entity,
    rt: &Runtime,
    status: &mut Mut<IkStatus>,
    com: Option<&mut Mut<IkCenterOfMass>>,
) {
    let Some(st) = rt.stages.iter().find(|s| s.entity == entity) else {
        return;
    };
    if st.setup_error.is_some() {
        return;
    }
    let frame_error = rt.frame_error.as_ref().or(st.frame_error.as_ref());
    match (&st.summary, frame_error) {
        (Some(summary), None) => {
            publish_summary(status, summary, &st.residuals);
            if let Some(com) = com {
                publish_com(com, st.center_of_mass);
            }
        }
        (_, Some(err)) => {
            publish_problem(status, err);
            if let Some(com) = com
                && com.active
            {
                com.active = false;
            }
        }
        // Faded out (weight 0): not solved this frame, nothing written; the rest of its
        // status (the last solve's) stays.
        (None, None)
            if st
                .slot
                .and_then(|i| rt.stack.slots().get(i))
                .is_some_and(|slot| slot.outcome == StageOutcome::Faded) =>
        {
            if status.solved {
                status.solved = false;
            }
        }
        // Disabled stage: its status stays as it was.
        (None, None) => {}
    }
}

fn publish_summary(status: &mut Mut<IkStatus>, s: &Summary, residuals: &[f32]) {
    let st = status.bypass_change_detection();
    let same = st.ready
        && st.solved
        && st.converged == s.converged
        && st.iterations == s.iterations
        && st.position_residual == s.position_residual
        && st.rotation_residual == s.rotation_residual
        && st.center_of_mass_residual == s.center_of_mass_residual
        && st.final_position_residual == s.final_position_residual
        && st.final_rotation_residual == s.final_rotation_residual
        && st.goals_moved == s.goals_moved
        && st.residuals == residuals
        && st.last_error.is_none();
    if same {
        return;
    }
    st.ready = true;
    st.solved = true;
    st.converged = s.converged;
    st.iterations = s.iterations;
    st.position_residual = s.position_residual;
    st.rotation_residual = s.rotation_residual;
    st.center_of_mass_residual = s.center_of_mass_residual;
    st.final_position_residual = s.final_position_residual;
    st.final_rotation_residual = s.final_rotation_residual;
    st.goals_moved = s.goals_moved;
    st.residuals.clear();
    st.residuals.extend_from_slice(residuals);
    st.last_error = None;
    status.set_changed();
}

fn publish_problem(status: &mut Mut<IkStatus>, err: &IkError) {
    if status.solved || status.converged {
        status.solved = false;
        status.converged = false;
    }
    if status.last_error.as_ref() != Some(err) {
        status.last_error = Some(err.clone());
    }
}

fn publish_com(com: &mut Mut<IkCenterOfMass>, measured: Option<(Vec3, Vec3, Vec3)>) {
    match measured {
        Some((c, support, up)) => {
            let new = IkCenterOfMass {
                active: true,
                center_of_mass: c,
                support,
                up,
            };
            com.set_if_neq(new);
        }
        None => {
            if com.active {
                com.active = false;
            }
        }
    }
}

/// Logs `err` for `entity` unless it was logged already.
pub(crate) fn warn_once(warned: &mut Vec<IkError>, entity: Entity, err: &IkError) {
    if !warned.contains(err) {
        warn!("bevy_ik: {entity}: {err}; keeping the input pose");
        warned.push(err.clone());
    }
}

/// A weight clamped to `[0, 1]`; NaN counts as 0.
pub(crate) fn finite_weight(w: f32) -> f32 {
    if w.is_nan() { 0.0 } else { w.clamp(0.0, 1.0) }
}
