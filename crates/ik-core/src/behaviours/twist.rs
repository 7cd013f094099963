//! Twist distribution: the twist IK (or animation) puts into a wrist, spread over the forearm's
//! twist bones so skinned wrists do not candy-wrap (Unity's Twist Correction, Godot's
//! `BoneTwistDisperser3D`, Final IK's twist relaxers).
//!
//! A [`TwistSegment`] runs from a `parent` bone (the lower arm) to a `child` (the hand) below
//! it. Each solve measures the child's twist relative to the parent about the segment's rest
//! axis (parent → child, derived from the rest pose): `θ`, the twist of
//! `R_rel · R_rel,rest⁻¹` where `R_rel` is the child's rotation relative to the parent. Each
//! twist bone at fraction `f` is then set to its rest rotation relative to the parent turned
//! by `f·θ` about the axis:
//!
//! - **in-line** twist bones (between the parent and the child: Rigify's `DEF-forearm.L.001`,
//!   a `ForearmTwist` between forearm and hand) take increasing shares and the child is
//!   re-expressed under them, unchanged in model space: the local twists along the segment sum
//!   to `θ` and the wrist's own twist drops to `(1 − f_last)·θ`;
//! - **leaf** twist bones (children of the parent beside the child: Unreal's
//!   `lowerarm_twist_01_l`) take `f·θ`; the hand is not below them and is untouched.
//!
//! Upper arms and thighs ([`CounterTwistSegment`]): their own twist is taken back by their
//! leaf twist bones near the joint, a bone at fraction `f` keeping `f·θ` of it.
//!
//! A rig with no twist bones gets no segment ([`TwistDistribution::from_humanoid`]) and nothing
//! changes. The default fraction of a twist bone is where its origin lies along the segment at
//! rest (0 at the parent, 1 at the child).

use glam::{Quat, Vec3};

use super::BehaviourError;
use crate::humanoid::{HumanoidBone, HumanoidMap, Side};
use crate::pose::Pose;
use crate::rotation::twist_angle;
use crate::skeleton::{Skeleton, SkeletonError};
use crate::stack::{CustomReport, NonFinite, PoseBuffer, StackError, Stage, StageReport};

/// A twist bone and its share of the segment's twist.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct TwistBone {
    /// The bone.
    pub bone: usize,
    /// Its share of the twist, `[0, 1]`.
    pub fraction: f32,
}

#[derive(Clone, Debug, PartialEq)]
struct Twister {
    bone: TwistBone,
    /// Bones from below the segment parent down to this bone's parent (empty for a child of the
    /// segment parent).
    above: Vec<usize>,
    /// Rest rotation relative to the segment parent.
    rest_rel: Quat,
    inline: bool,
    /// Parent-local axis it twists about: an in-line bone about the line from its origin to
    /// the child (so the child does not move), a leaf about the segment axis.
    axis: Vec3,
}

/// One forearm-like segment: see the [module docs](self).
#[derive(Clone, Debug, PartialEq)]
pub struct TwistSegment {
    parent: usize,
    child: usize,
    /// Parent-local unit axis toward the child at rest.
    axis: Vec3,
    /// Bones from below `parent` down to `child` (included).
    path: Vec<usize>,
    rest_rel: Quat,
    twisters: Vec<Twister>,
}

/// Rotation of the last bone of `path` relative to the parent of its first, from `rotations`.
fn relative(rotations: &[Quat], path: &[usize]) -> Quat {
    path.iter().fold(Quat::IDENTITY, |q, &b| q * rotations[b])
}

impl TwistSegment {
    /// A segment from `parent` to its descendant `child` with `twist_bones` (each a descendant
    /// of `parent`, not of `child`, nor `child` itself).
    ///
    /// # Errors
    /// [`BehaviourError::Skeleton`] for bones out of range or in the wrong place;
    /// [`BehaviourError::DegenerateAxis`] when the child sits on the parent's origin;
    /// [`BehaviourError::InvalidSetting`] for a fraction outside `[0, 1]`.
    pub fn try_new(
        skeleton: &Skeleton,
        parent: usize,
        child: usize,
        twist_bones: &[TwistBone],
    ) -> Result<Self, BehaviourError> {
        let len = skeleton.len();
        let not_below = |a: usize, b: usize| SkeletonError::NotAncestor {
            root: skeleton.bones()[a].name.clone(),
            tip: skeleton.bones()[b].name.clone(),
        };
        for i in [parent, child]
            .into_iter()
            .chain(twist_bones.iter().map(|t| t.bone))
        {
            if i >= len {
                return Err(SkeletonError::IndexOutOfRange { index: i, len }.into());
            }
        }
        if parent == child || !skeleton.is_ancestor_or_self(parent, child) {
            return Err(not_below(parent, child).into());
        }
        let axis = skeleton
            .rest_bone_direction(parent, child)
            .ok_or(BehaviourError::DegenerateAxis("twist segment"))?;
        let below = |b: usize| -> Vec<usize> {
            let mut p: Vec<usize> = skeleton.ancestors_inclusive(b).collect();
            let at = p.iter().position(|&x| x == parent).unwrap_or(p.len());
            p.truncate(at);
            p.reverse();
            p
        };
        let rest: Vec<Quat> = skeleton.bones().iter().map(|b| b.rest.rotation).collect();
        let model = skeleton.rest_model_transforms();
        let path = below(child);
        let mut twisters = Vec::with_capacity(twist_bones.len());
        for t in twist_bones {
            if !(0.0..=1.0).contains(&t.fraction) {
                return Err(BehaviourError::InvalidSetting("twist fraction"));
            }
            if t.bone == parent
                || t.bone == child
                || !skeleton.is_ancestor_or_self(parent, t.bone)
                || skeleton.is_ancestor_or_self(child, t.bone)
            {
                return Err(not_below(parent, t.bone).into());
            }
            let mut above = below(t.bone);
            above.pop();
            let inline = skeleton.is_ancestor_or_self(t.bone, child);
            let to_child = model[parent].rotation.inverse()
                * (model[child].translation - model[t.bone].translation);
            twisters.push(Twister {
                bone: *t,
                rest_rel: relative(&rest, &below(t.bone)),
                above,
                inline,
                axis: if inline {
                    to_child.try_normalize().unwrap_or(axis)
                } else {
                    axis
                },
            });
        }
        // In-line bones parents first, so each is set under its already-set parents.
        twisters.sort_by_key(|t| (!t.inline, t.above.len()));
        Ok(Self {
            parent,
            child,
            axis,
            rest_rel: relative(&rest, &path),
            path,
            twisters,
        })
    }

    /// The segment's parent and child bones.
    #[must_use]
    pub fn ends(&self) -> (usize, usize) {
        (self.parent, self.child)
    }

    /// The twist bones with their fractions.
    pub fn twist_bones(&self) -> impl Iterator<Item = TwistBone> + '_ {
        self.twisters.iter().map(|t| t.bone)
    }

    /// The parent-local unit twist axis (toward the child at rest).
    #[must_use]
    pub fn axis(&self) -> Vec3 {
        self.axis
    }

    /// The child's twist relative to the parent about the axis, radians, in `pose`.
    #[must_use]
    pub fn twist(&self, pose: &Pose) -> f32 {
        let rel = relative(&pose.rotations, &self.path);
        twist_angle(rel * self.rest_rel.inverse(), self.axis)
    }

    /// The twist of `bone` (on the segment or a twist bone) relative to the parent, radians, in
    /// `pose` (its cumulative share), or `None` for another bone.
    #[must_use]
    pub fn twist_of(&self, skeleton: &Skeleton, pose: &Pose, bone: usize) -> Option<f32> {
        if bone == self.parent || !skeleton.is_ancestor_or_self(self.parent, bone) {
            return None;
        }
        let mut path: Vec<usize> = skeleton.ancestors_inclusive(bone).collect();
        let at = path.iter().position(|&x| x == self.parent)?;
        path.truncate(at);
        path.reverse();
        let rest: Quat = path.iter().fold(Quat::IDENTITY, |q, &b| {
            q * skeleton.bones()[b].rest.rotation
        });
        let rel = relative(&pose.rotations, &path);
        Some(twist_angle(rel * rest.inverse(), self.axis))
    }

    fn apply(&self, buffer: &mut PoseBuffer) -> bool {
        let rotations = &buffer.pose().rotations;
        let rel = relative(rotations, &self.path);
        if !rel.is_finite() {
            return false;
        }
        let theta = twist_angle(rel * self.rest_rel.inverse(), self.axis);
        let mut inline = false;
        for t in &self.twisters {
            let target = Quat::from_axis_angle(t.axis, t.bone.fraction * theta) * t.rest_rel;
            let above = relative(&buffer.pose().rotations, &t.above);
            let local = (above.inverse() * target).normalize();
            let tr = buffer.pose().translations[t.bone.bone];
            buffer.set_local(t.bone.bone, local, tr);
            inline |= t.inline;
        }
        if inline {
            let n = self.path.len();
            let above = relative(&buffer.pose().rotations, &self.path[..n - 1]);
            let local = (above.inverse() * rel).normalize();
            let tr = buffer.pose().translations[self.child];
            buffer.set_local(self.child, local, tr);
        }
        true
    }
}

/// An upper arm or thigh whose own twist (about its rest axis, relative to its rest) is taken
/// back by its leaf twist bones near the joint: a twist bone at fraction `f` along the bone
/// (0 at its joint, 1 at its child) turns by `−(1 − f)·θ` about the axis in the bone's frame,
/// so it carries `f·θ` of the twist (Unreal's `upperarm_twist_01_l`, `thigh_twist_01_l`).
#[derive(Clone, Debug, PartialEq)]
pub struct CounterTwistSegment {
    bone: usize,
    along: Vec3,
    rest: Quat,
    twisters: Vec<(TwistBone, Quat)>,
}

impl CounterTwistSegment {
    /// The segment of `bone` (its axis toward its descendant `toward` at rest) with
    /// `twist_bones`, each a child of `bone`.
    ///
    /// # Errors
    /// [`BehaviourError::Skeleton`] for bones out of range or not children of `bone`;
    /// [`BehaviourError::DegenerateAxis`] when `toward` sits on `bone`'s origin;
    /// [`BehaviourError::InvalidSetting`] for a fraction outside `[0, 1]`.
    pub fn try_new(
        skeleton: &Skeleton,
        bone: usize,
        toward: usize,
        twist_bones: &[TwistBone],
    ) -> Result<Self, BehaviourError> {
        let len = skeleton.len();
        for i in [bone, toward]
            .into_iter()
            .chain(twist_bones.iter().map(|t| t.bone))
        {
            if i >= len {
                return Err(SkeletonError::IndexOutOfRange { index: i, len }.into());
            }
        }
        let along = skeleton
            .rest_bone_direction(bone, toward)
            .ok_or(BehaviourError::DegenerateAxis("counter-twist bone"))?;
        let mut twisters = Vec::with_capacity(twist_bones.len());
        for t in twist_bones {
            if !(0.0..=1.0).contains(&t.fraction) {
                return Err(BehaviourError::InvalidSetting("twist fraction"));
            }
            if skeleton.parent(t.bone) != Some(bone) {
                return Err(SkeletonError::NotAncestor {
                    root: skeleton.bones()[bone].name.clone(),
                    tip: skeleton.bones()[t.bone].name.clone(),
                }
                .into());
            }
            twisters.push((*t, skeleton.bones()[t.bone].rest.rotation));
        }
        Ok(Self {
            bone,
            along,
            rest: skeleton.bones()[bone].rest.rotation,
            twisters,
        })
    }

    /// The bone whose twist is taken back.
    #[must_use]
    pub fn bone(&self) -> usize {
        self.bone
    }

    /// The twist bones with their fractions.
    pub fn twist_bones(&self) -> impl Iterator<Item = TwistBone> + '_ {
        self.twisters.iter().map(|t| t.0)
    }

    /// The bone-local unit axis.
    #[must_use]
    pub fn axis(&self) -> Vec3 {
        self.along
    }

    /// The bone's own twist relative to its rest, radians, in `pose`.
    #[must_use]
    pub fn twist(&self, pose: &Pose) -> f32 {
        twist_angle(self.rest.inverse() * pose.rotations[self.bone], self.along)
    }

    fn apply(&self, buffer: &mut PoseBuffer) -> bool {
        let local = buffer.pose().rotations[self.bone];
        if !local.is_finite() {
            return false;
        }
        let theta = twist_angle(self.rest.inverse() * local, self.along);
        for (t, rest) in &self.twisters {
            let q = Quat::from_axis_angle(self.along, -(1.0 - t.fraction) * theta) * *rest;
            let tr = buffer.pose().translations[t.bone];
            buffer.set_local(t.bone, q.normalize(), tr);
        }
        true
    }
}

/// Whether a bone name marks a twist/roll helper (`lowerarm_twist_01_l`, `LeftForeArmRoll`,
/// `thigh_roll.L`).
#[must_use]
pub fn is_twist_name(name: &str) -> bool {
    crate::humanoid::is_twist_bone_name(name)
}

/// The twist stage: any number of [`TwistSegment`]s (see the [module docs](self)).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TwistDistribution {
    segments: Vec<TwistSegment>,
    counter: Vec<CounterTwistSegment>,
    bones: Vec<usize>,
}

impl TwistDistribution {
    /// A stage over `segments` (forearms) and `counter` (upper arms, thighs).
    #[must_use]
    pub fn with_counter(segments: Vec<TwistSegment>, counter: Vec<CounterTwistSegment>) -> Self {
        let mut s = Self::new(segments);
        s.bones.extend(
            counter
                .iter()
                .flat_map(|c| c.twisters.iter().map(|t| t.0.bone)),
        );
        s.bones.sort_unstable();
        s.bones.dedup();
        s.counter = counter;
        s
    }

    /// The upper-arm and thigh segments.
    #[must_use]
    pub fn counter_segments(&self) -> &[CounterTwistSegment] {
        &self.counter
    }

    /// A stage over `segments`.
    #[must_use]
    pub fn new(segments: Vec<TwistSegment>) -> Self {
        let mut bones: Vec<usize> = segments
            .iter()
            .flat_map(|s| {
                s.twisters
                    .iter()
                    .map(|t| t.bone.bone)
                    .chain(s.twisters.iter().any(|t| t.inline).then_some(s.child))
            })
            .collect();
        bones.sort_unstable();
        bones.dedup();
        Self {
            segments,
            counter: Vec::new(),
            bones,
        }
    }

    /// The forearm segments of a humanoid (lower arm → hand), each with the twist bones the rig
    /// has: the bones between lower arm and hand, and the lower arm's (or those bones')
    /// children named as twist/roll helpers (`lowerarm_twist_01_l`, `LeftForeArmRoll`) or
    /// mapped as [`HumanoidBone::LeftLowerArmTwist`]. Fractions from the rest positions. A
    /// forearm without twist bones gets no segment (so a rig without any gets an empty stage
    /// that changes nothing).
    #[must_use]
    pub fn from_humanoid(skeleton: &Skeleton, map: &HumanoidMap) -> Self {
        let rest = skeleton.rest_model_transforms();
        let mut segments = Vec::new();
        for side in [Side::Left, Side::Right] {
            let (Some(lower), Some(hand)) = (
                map.get(HumanoidBone::LeftLowerArm.on(side)),
                map.get(HumanoidBone::LeftHand.on(side)),
            ) else {
                continue;
            };
            if lower == hand || !skeleton.is_ancestor_or_self(lower, hand) {
                continue;
            }
            let mapped_twist = map.get(HumanoidBone::LeftLowerArmTwist.on(side));
            let (a, b) = (rest[lower].translation, rest[hand].translation);
            let seg = b - a;
            let fraction = |x: usize| {
                let t = (rest[x].translation - a).dot(seg) / seg.length_squared().max(1e-12);
                if t.is_finite() {
                    t.clamp(0.0, 1.0)
                } else {
                    0.5
                }
            };
            let mut inline: Vec<usize> = skeleton.ancestors_inclusive(hand).collect();
            let at = inline.iter().position(|&x| x == lower).unwrap_or(0);
            inline.truncate(at);
            inline.remove(0);
            let mut twist: Vec<TwistBone> = inline
                .iter()
                .map(|&x| TwistBone {
                    bone: x,
                    fraction: fraction(x),
                })
                .collect();
            for (i, bone) in skeleton.bones().iter().enumerate() {
                let Some(p) = bone.parent else { continue };
                if (p == lower || inline.contains(&p))
                    && !inline.contains(&i)
                    && i != hand
                    && (Some(i) == mapped_twist || is_twist_name(&bone.name))
                {
                    twist.push(TwistBone {
                        bone: i,
                        fraction: fraction(i),
                    });
                }
            }
            if twist.is_empty() {
                continue;
            }
            if let Ok(s) = TwistSegment::try_new(skeleton, lower, hand, &twist) {
                segments.push(s);
            }
        }
        let mut counter = Vec::new();
        for side in [Side::Left, Side::Right] {
            for (upper, lower) in [
                (HumanoidBone::LeftUpperArm, HumanoidBone::LeftLowerArm),
                (HumanoidBone::LeftUpperLeg, HumanoidBone::LeftLowerLeg),
            ] {
                let (Some(u), Some(l)) = (map.get(upper.on(side)), map.get(lower.on(side))) else {
                    continue;
                };
                if u == l || !skeleton.is_ancestor_or_self(u, l) {
                    continue;
                }
                let (a, b) = (rest[u].translation, rest[l].translation);
                let seg = b - a;
                let twist: Vec<TwistBone> = skeleton
                    .bones()
                    .iter()
                    .enumerate()
                    .filter(|(i, bone)| {
                        bone.parent == Some(u)
                            && !skeleton.is_ancestor_or_self(*i, l)
                            && is_twist_name(&bone.name)
                    })
                    .map(|(i, _)| {
                        let t =
                            (rest[i].translation - a).dot(seg) / seg.length_squared().max(1e-12);
                        TwistBone {
                            bone: i,
                            fraction: if t.is_finite() {
                                t.clamp(0.0, 1.0)
                            } else {
                                0.5
                            },
                        }
                    })
                    .collect();
                if twist.is_empty() {
                    continue;
                }
                if let Ok(c) = CounterTwistSegment::try_new(skeleton, u, l, &twist) {
                    counter.push(c);
                }
            }
        }
        Self::with_counter(segments, counter)
    }

    /// The segments.
    #[must_use]
    pub fn segments(&self) -> &[TwistSegment] {
        &self.segments
    }
}

impl Stage for TwistDistribution {
    fn bones(&self) -> &[usize] {
        &self.bones
    }

    fn solve(
        &mut self,
        _skeleton: &Skeleton,
        buffer: &mut PoseBuffer,
    ) -> Result<StageReport, StackError> {
        for s in &self.segments {
            if !s.apply(buffer) {
                return Err(StackError::NonFinite(NonFinite::InputPose));
            }
        }
        for c in &self.counter {
            if !c.apply(buffer) {
                return Err(StackError::NonFinite(NonFinite::InputPose));
            }
        }
        Ok(CustomReport {
            converged: true,
            iterations: 1,
            ..CustomReport::default()
        }
        .into())
    }
}
