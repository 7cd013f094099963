//! Skeletons: a flat, topologically ordered array of bones with parent indices, names and rest
//! transforms; forward kinematics; chain extraction.
//!
//! Nothing here assumes a T-pose or which local axis a bone points along: a bone's direction is
//! always derived from its child's rest offset.

use glam::Vec3;
use thiserror::Error;

use crate::pose::{BoneTransform, Pose};

/// Errors from building a skeleton, extracting a chain or checking a pose against a skeleton.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum SkeletonError {
    /// The skeleton has no bones.
    #[error("the skeleton has no bones")]
    Empty,
    /// A bone's parent index points outside the bone array.
    #[error("bone `{bone}` has parent index {parent}, but the skeleton has only {len} bones")]
    ParentOutOfRange {
        /// The bone with the bad parent.
        bone: String,
        /// The parent index given.
        parent: usize,
        /// Number of bones.
        len: usize,
    },
    /// A bone is listed before its parent (bones must be topologically ordered).
    #[error(
        "bone `{bone}` comes before its parent `{parent}`: bones must be ordered parents first"
    )]
    ParentAfterChild {
        /// The child bone.
        bone: String,
        /// Its parent, which comes later in the array.
        parent: String,
    },
    /// Following parents from this bone leads back to it.
    #[error("bone `{bone}` is its own ancestor (cycle in the hierarchy)")]
    Cycle {
        /// A bone on the cycle.
        bone: String,
    },
    /// A rest transform has a NaN or infinite component or a zero scale, or places the bone
    /// beyond ±[`MAX_COORDINATE`] in model space (with its scale beyond ±1e6).
    #[error("bone `{bone}` has a non-finite, degenerate or out-of-range rest transform")]
    NonFiniteRest {
        /// The bone.
        bone: String,
    },
    /// A bone index is out of range.
    #[error("bone index {index} is out of range for a skeleton of {len} bones")]
    IndexOutOfRange {
        /// The index given.
        index: usize,
        /// Number of bones.
        len: usize,
    },
    /// No bone has this name.
    #[error("no bone named `{name}`")]
    UnknownBone {
        /// The name looked up.
        name: String,
    },
    /// The chain root is not an ancestor of (or equal to) the chain tip.
    #[error("bone `{root}` is not an ancestor of `{tip}`")]
    NotAncestor {
        /// The requested chain root.
        root: String,
        /// The requested chain tip.
        tip: String,
    },
    /// A bone in a chain has (almost) zero length: its child sits on its origin.
    #[error("bone `{bone}` has zero length in the rest pose")]
    ZeroLengthBone {
        /// The bone whose child offset is (almost) zero.
        bone: String,
    },
    /// A pose does not have one entry per bone.
    #[error("pose has {found} bones, skeleton has {expected}")]
    PoseLengthMismatch {
        /// Bones in the skeleton.
        expected: usize,
        /// Entries in the pose.
        found: usize,
    },
    /// A pose has a NaN or infinite rotation or translation, or a translation beyond
    /// ±[`MAX_COORDINATE`].
    #[error("pose has a non-finite or out-of-range transform at bone `{bone}`")]
    NonFinitePose {
        /// The bone.
        bone: String,
    },
    /// A pose rotation is not a unit quaternion (zero, or its length is more than
    /// [`crate::pose::UNIT_ROTATION_TOLERANCE`] from 1).
    #[error("pose rotation of bone `{bone}` has length {length}, not 1")]
    NonUnitRotation {
        /// The bone.
        bone: String,
        /// The rotation's length.
        length: f32,
    },
}

/// Bones shorter than this (in model units, relative to the skeleton's size) count as zero length.
pub const MIN_BONE_LENGTH: f32 = 1e-6;

/// The largest coordinate (model units) a skeleton's rest pose, a pose's translations or a
/// solver goal may have. IK in f32 means nothing far beyond it (one unit of precision is then
/// larger than 10⁷), and squared distances of larger values overflow f32; such input is
/// rejected as out of range instead of producing infinities or NaN.
pub const MAX_COORDINATE: f32 = 1e15;

/// One bone: a name, an optional parent and a rest transform relative to the parent.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Bone {
    /// The bone's name (as in the source rig, e.g. `mixamorig:LeftArm`).
    pub name: String,
    /// Index of the parent bone, which must come earlier in the array; `None` for a root.
    pub parent: Option<usize>,
    /// Rest (bind) transform relative to the parent.
    pub rest: BoneTransform,
}

impl Bone {
    /// A bone with the given name, parent and rest transform.
    #[must_use]
    pub fn new(name: impl Into<String>, parent: Option<usize>, rest: BoneTransform) -> Self {
        Self {
            name: name.into(),
            parent,
            rest,
        }
    }
}

/// A validated, topologically ordered bone hierarchy (parents before children).
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Skeleton {
    bones: Vec<Bone>,
}

impl Skeleton {
    /// Builds a skeleton from bones ordered parents-first.
    ///
    /// # Errors
    /// [`SkeletonError::Empty`], [`SkeletonError::ParentOutOfRange`],
    /// [`SkeletonError::ParentAfterChild`], [`SkeletonError::Cycle`] (a bone that is its own
    /// parent) or [`SkeletonError::NonFiniteRest`] (also for a rest pose reaching beyond
    /// ±[`MAX_COORDINATE`] in model space).
    pub fn try_new(bones: Vec<Bone>) -> Result<Self, SkeletonError> {
        if bones.is_empty() {
            return Err(SkeletonError::Empty);
        }
        let len = bones.len();
        for (i, bone) in bones.iter().enumerate() {
            if let Some(p) = bone.parent {
                if p >= len {
                    return Err(SkeletonError::ParentOutOfRange {
                        bone: bone.name.clone(),
                        parent: p,
                        len,
                    });
                }
                if p == i {
                    return Err(SkeletonError::Cycle {
                        bone: bone.name.clone(),
                    });
                }
                if p > i {
                    // Distinguish a real cycle from a mere ordering problem.
                    if Self::has_cycle_from(&bones, i) {
                        return Err(SkeletonError::Cycle {
                            bone: bone.name.clone(),
                        });
                    }
                    return Err(SkeletonError::ParentAfterChild {
                        bone: bone.name.clone(),
                        parent: bones[p].name.clone(),
                    });
                }
            }
            let r = &bone.rest;
            let rotation_length = r.rotation.length();
            if !r.is_finite()
                || r.scale.abs().min_element() < 1e-12
                || !(1e-6..=1e6).contains(&rotation_length)
            {
                return Err(SkeletonError::NonFiniteRest {
                    bone: bone.name.clone(),
                });
            }
        }
        let bones = bones
            .into_iter()
            .map(|mut b| {
                b.rest.rotation = b.rest.rotation.normalize();
                b
            })
            .collect();
        let skeleton = Self { bones };
        // The rest pose in model space must stay in range (scales multiply down the chain).
        for (bone, m) in skeleton.bones.iter().zip(skeleton.rest_model_transforms()) {
            if !(m.translation.abs().max_element() <= MAX_COORDINATE
                && m.scale.abs().max_element() <= 1e6)
            {
                return Err(SkeletonError::NonFiniteRest {
                    bone: bone.name.clone(),
                });
            }
        }
        Ok(skeleton)
    }

    /// Builds a skeleton from bones in any order, sorting them parents-first.
    ///
    /// Returns the skeleton and, for each input bone, its index in the new skeleton.
    ///
    /// # Errors
    /// As [`Skeleton::try_new`]; a hierarchy with a loop gives [`SkeletonError::Cycle`].
    pub fn try_from_unordered(bones: Vec<Bone>) -> Result<(Self, Vec<usize>), SkeletonError> {
        let len = bones.len();
        if len == 0 {
            return Err(SkeletonError::Empty);
        }
        for bone in &bones {
            if let Some(p) = bone.parent
                && p >= len
            {
                return Err(SkeletonError::ParentOutOfRange {
                    bone: bone.name.clone(),
                    parent: p,
                    len,
                });
            }
        }
        // Depth of each bone; a walk longer than `len` means a cycle.
        let mut depth = vec![0usize; len];
        for (i, d) in depth.iter_mut().enumerate() {
            let mut steps = 0;
            let mut cur = i;
            while let Some(p) = bones[cur].parent {
                steps += 1;
                if steps > len {
                    return Err(SkeletonError::Cycle {
                        bone: bones[i].name.clone(),
                    });
                }
                cur = p;
            }
            *d = steps;
        }
        let mut order: Vec<usize> = (0..len).collect();
        order.sort_by_key(|&i| (depth[i], i));
        let mut new_index = vec![0usize; len];
        for (new, &old) in order.iter().enumerate() {
            new_index[old] = new;
        }
        let sorted = order
            .iter()
            .map(|&old| {
                let b = &bones[old];
                Bone {
                    name: b.name.clone(),
                    parent: b.parent.map(|p| new_index[p]),
                    rest: b.rest,
                }
            })
            .collect();
        Ok((Self::try_new(sorted)?, new_index))
    }

    fn has_cycle_from(bones: &[Bone], start: usize) -> bool {
        let mut cur = start;
        for _ in 0..=bones.len() {
            match bones[cur].parent {
                Some(p) if p < bones.len() => {
                    if p == start {
                        return true;
                    }
                    cur = p;
                }
                _ => return false,
            }
        }
        true
    }

    /// Number of bones.
    #[must_use]
    pub fn len(&self) -> usize {
        self.bones.len()
    }

    /// Always false: a skeleton has at least one bone.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.bones.is_empty()
    }

    /// All bones, parents first.
    #[must_use]
    pub fn bones(&self) -> &[Bone] {
        &self.bones
    }

    /// Bone `index`, if it exists.
    #[must_use]
    pub fn bone(&self, index: usize) -> Option<&Bone> {
        self.bones.get(index)
    }

    /// Parent of bone `index` (`None` for a root or an out-of-range index).
    #[inline]
    #[must_use]
    pub fn parent(&self, index: usize) -> Option<usize> {
        self.bones.get(index).and_then(|b| b.parent)
    }

    /// Index of the first bone called `name`.
    #[must_use]
    pub fn find(&self, name: &str) -> Option<usize> {
        self.bones.iter().position(|b| b.name == name)
    }

    /// Index of the first bone called `name`, as a `Result`.
    ///
    /// # Errors
    /// [`SkeletonError::UnknownBone`].
    pub fn index_of(&self, name: &str) -> Result<usize, SkeletonError> {
        self.find(name).ok_or_else(|| SkeletonError::UnknownBone {
            name: name.to_owned(),
        })
    }

    /// Children of bone `index`, in order.
    pub fn children(&self, index: usize) -> impl Iterator<Item = usize> + '_ {
        self.bones
            .iter()
            .enumerate()
            .skip(index + 1)
            .filter(move |(_, b)| b.parent == Some(index))
            .map(|(i, _)| i)
    }

    /// `index` and its ancestors, from `index` up to its root.
    pub fn ancestors_inclusive(&self, index: usize) -> impl Iterator<Item = usize> + '_ {
        core::iter::successors((index < self.bones.len()).then_some(index), move |&i| {
            self.bones[i].parent
        })
    }

    /// Whether `ancestor` is `bone` or one of its ancestors.
    #[must_use]
    pub fn is_ancestor_or_self(&self, ancestor: usize, bone: usize) -> bool {
        self.ancestors_inclusive(bone).any(|i| i == ancestor)
    }

    /// The rest pose.
    #[must_use]
    pub fn rest_pose(&self) -> Pose {
        Pose::from_rest(self)
    }

    fn check_index(&self, index: usize) -> Result<(), SkeletonError> {
        if index < self.bones.len() {
            Ok(())
        } else {
            Err(SkeletonError::IndexOutOfRange {
                index,
                len: self.bones.len(),
            })
        }
    }

    /// Forward kinematics: the model-space transform of every bone in `pose`, written into `out`
    /// (resized to the bone count; no allocation once it has the capacity).
    ///
    /// Model space is the space the root bones' transforms are expressed in.
    ///
    /// # Panics
    /// If `pose` does not have one entry per bone (see [`Pose::validate`]).
    pub fn model_transforms_into(&self, pose: &Pose, out: &mut Vec<BoneTransform>) {
        assert_eq!(pose.len(), self.len(), "pose does not match skeleton");
        out.clear();
        for (i, bone) in self.bones.iter().enumerate() {
            let local = pose.local_transform(self, i);
            let model = match bone.parent {
                Some(p) => out[p].mul_transform(&local),
                None => local,
            };
            out.push(model);
        }
    }

    /// Forward kinematics into a new vector; see [`Skeleton::model_transforms_into`].
    ///
    /// # Panics
    /// If `pose` does not have one entry per bone.
    #[must_use]
    pub fn model_transforms(&self, pose: &Pose) -> Vec<BoneTransform> {
        let mut out = Vec::with_capacity(self.len());
        self.model_transforms_into(pose, &mut out);
        out
    }

    /// The model-space transform of one bone, walking only its ancestors.
    ///
    /// # Panics
    /// If `index` is out of range or `pose` does not match the skeleton.
    #[must_use]
    pub fn model_transform(&self, pose: &Pose, index: usize) -> BoneTransform {
        let mut t = pose.local_transform(self, index);
        let mut cur = self.bones[index].parent;
        while let Some(p) = cur {
            t = pose.local_transform(self, p).mul_transform(&t);
            cur = self.bones[p].parent;
        }
        t
    }

    /// The model-space transforms of the rest pose.
    #[must_use]
    pub fn rest_model_transforms(&self) -> Vec<BoneTransform> {
        self.model_transforms(&self.rest_pose())
    }

    /// The chain of bones from `root` down to `tip` (both included).
    ///
    /// Every bone of the chain except the tip must have non-zero length, measured to the next
    /// bone of the chain in the rest pose.
    ///
    /// # Errors
    /// [`SkeletonError::IndexOutOfRange`], [`SkeletonError::NotAncestor`] or
    /// [`SkeletonError::ZeroLengthBone`].
    pub fn chain(&self, root: usize, tip: usize) -> Result<Chain, SkeletonError> {
        self.check_index(root)?;
        self.check_index(tip)?;
        let mut bones = Vec::new();
        let mut found = false;
        for i in self.ancestors_inclusive(tip) {
            bones.push(i);
            if i == root {
                found = true;
                break;
            }
        }
        if !found {
            return Err(SkeletonError::NotAncestor {
                root: self.bones[root].name.clone(),
                tip: self.bones[tip].name.clone(),
            });
        }
        bones.reverse();
        let rest = self.rest_model_transforms();
        for w in bones.windows(2) {
            let len = rest[w[1]].translation.distance(rest[w[0]].translation);
            // NaN lengths fail this test too.
            if len.is_nan() || len <= MIN_BONE_LENGTH {
                return Err(SkeletonError::ZeroLengthBone {
                    bone: self.bones[w[0]].name.clone(),
                });
            }
        }
        Ok(Chain { bones })
    }

    /// The chain from the bone named `root` to the bone named `tip`; see [`Skeleton::chain`].
    ///
    /// # Errors
    /// [`SkeletonError::UnknownBone`] and the errors of [`Skeleton::chain`].
    pub fn chain_by_name(&self, root: &str, tip: &str) -> Result<Chain, SkeletonError> {
        self.chain(self.index_of(root)?, self.index_of(tip)?)
    }

    /// The rest-pose direction in which bone `index` points, in its own local frame: toward its
    /// child `toward` (which must be a descendant), normalised. `None` for zero length.
    #[must_use]
    pub fn rest_bone_direction(&self, index: usize, toward: usize) -> Option<Vec3> {
        if !self.is_ancestor_or_self(index, toward) || index == toward {
            return None;
        }
        // Offset of `toward` expressed in `index`'s local frame, in the rest pose.
        let mut t = BoneTransform::IDENTITY;
        let mut cur = toward;
        while cur != index {
            t = self.bones[cur].rest.mul_transform(&t);
            cur = self.bones[cur].parent?;
        }
        let scaled = self.bones[index].rest.scale * t.translation;
        scaled.try_normalize()
    }
}

/// A chain of bones from a root down to a tip, as indices into a [`Skeleton`], root first.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Chain {
    bones: Vec<usize>,
}

impl Chain {
    /// The bone indices, root first.
    #[must_use]
    pub fn bones(&self) -> &[usize] {
        &self.bones
    }

    /// The first bone.
    #[must_use]
    pub fn root(&self) -> usize {
        self.bones[0]
    }

    /// The last bone (the end effector).
    #[must_use]
    pub fn tip(&self) -> usize {
        self.bones[self.bones.len() - 1]
    }

    /// Number of bones, tip included.
    #[must_use]
    pub fn len(&self) -> usize {
        self.bones.len()
    }

    /// Always false: a chain has at least one bone.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.bones.is_empty()
    }

    /// Model-space distance between consecutive chain bones in `pose` (one fewer than bones).
    #[must_use]
    pub fn segment_lengths(&self, skeleton: &Skeleton, pose: &Pose) -> Vec<f32> {
        let model = skeleton.model_transforms(pose);
        self.bones
            .windows(2)
            .map(|w| model[w[1]].translation.distance(model[w[0]].translation))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::Quat;

    fn bone(name: &str, parent: Option<usize>, t: Vec3) -> Bone {
        Bone::new(name, parent, BoneTransform::from_translation(t))
    }

    fn arm() -> Skeleton {
        Skeleton::try_new(vec![
            bone("root", None, Vec3::ZERO),
            Bone::new(
                "upper",
                Some(0),
                BoneTransform::from_translation_rotation(
                    Vec3::new(0.0, 1.0, 0.0),
                    Quat::from_rotation_z(0.5),
                ),
            ),
            bone("lower", Some(1), Vec3::new(0.0, 0.3, 0.0)),
            bone("hand", Some(2), Vec3::new(0.0, 0.25, 0.0)),
            bone("other", Some(0), Vec3::X),
        ])
        .unwrap()
    }

    #[test]
    fn rejects_bad_hierarchies() {
        assert_eq!(Skeleton::try_new(vec![]), Err(SkeletonError::Empty));
        let e = Skeleton::try_new(vec![bone("a", Some(1), Vec3::X), bone("b", None, Vec3::X)]);
        assert!(matches!(e, Err(SkeletonError::ParentAfterChild { ref bone, .. }) if bone == "a"));
        let e = Skeleton::try_new(vec![
            bone("a", Some(1), Vec3::X),
            bone("b", Some(0), Vec3::X),
        ]);
        assert!(matches!(e, Err(SkeletonError::Cycle { .. })));
        let e = Skeleton::try_new(vec![bone("a", Some(0), Vec3::X)]);
        assert!(matches!(e, Err(SkeletonError::Cycle { .. })));
        let e = Skeleton::try_new(vec![bone("a", Some(7), Vec3::X)]);
        assert!(matches!(
            e,
            Err(SkeletonError::ParentOutOfRange { parent: 7, .. })
        ));
        let e = Skeleton::try_new(vec![bone("nan", None, Vec3::new(f32::NAN, 0.0, 0.0))]);
        assert!(matches!(e, Err(SkeletonError::NonFiniteRest { ref bone }) if bone == "nan"));
    }

    #[test]
    fn unordered_input_is_sorted_and_cycles_detected() {
        let (s, map) = Skeleton::try_from_unordered(vec![
            bone("c", Some(1), Vec3::X),
            bone("b", Some(2), Vec3::X),
            bone("a", None, Vec3::X),
        ])
        .unwrap();
        assert_eq!(s.bones()[0].name, "a");
        assert_eq!(s.bones()[map[0]].name, "c");
        assert_eq!(s.parent(map[0]), Some(map[1]));
        let e = Skeleton::try_from_unordered(vec![
            bone("a", Some(1), Vec3::X),
            bone("b", Some(0), Vec3::X),
        ]);
        assert!(matches!(e, Err(SkeletonError::Cycle { .. })));
    }

    #[test]
    fn forward_kinematics_matches_single_bone_walk() {
        let s = arm();
        let mut pose = s.rest_pose();
        pose.rotations[2] = Quat::from_rotation_x(0.7);
        let all = s.model_transforms(&pose);
        for (i, model) in all.iter().enumerate() {
            let one = s.model_transform(&pose, i);
            assert!(one.translation.distance(model.translation) < 1e-6);
        }
        // upper is rotated 0.5 about Z, so lower sits at (−sin .5, cos .5)·0.3 above (0,1,0).
        let expected = Vec3::new(-0.5f32.sin() * 0.3, 1.0 + 0.5f32.cos() * 0.3, 0.0);
        assert!(all[2].translation.distance(expected) < 1e-6);
    }

    #[test]
    fn chains_validate_ancestry_and_length() {
        let s = arm();
        let c = s.chain_by_name("upper", "hand").unwrap();
        assert_eq!(c.bones(), &[1, 2, 3]);
        let lens = c.segment_lengths(&s, &s.rest_pose());
        assert!((lens[0] - 0.3).abs() < 1e-6 && (lens[1] - 0.25).abs() < 1e-6);
        assert!(matches!(
            s.chain_by_name("other", "hand"),
            Err(SkeletonError::NotAncestor { .. })
        ));
        assert!(matches!(
            s.chain_by_name("upper", "nope"),
            Err(SkeletonError::UnknownBone { .. })
        ));
        let z = Skeleton::try_new(vec![
            bone("a", None, Vec3::ZERO),
            bone("b", Some(0), Vec3::ZERO),
            bone("c", Some(1), Vec3::X),
        ])
        .unwrap();
        assert!(
            matches!(z.chain(0, 2), Err(SkeletonError::ZeroLengthBone { ref bone }) if bone == "a")
        );
    }

    #[test]
    fn rest_bone_direction_is_in_local_frame() {
        let s = arm();
        let d = s.rest_bone_direction(1, 3).unwrap();
        assert!(d.distance(Vec3::Y) < 1e-6);
        assert!(s.rest_bone_direction(4, 3).is_none());
    }

    #[test]
    fn inverse_transform_round_trips() {
        let t = BoneTransform {
            translation: Vec3::new(1.0, -2.0, 0.5),
            rotation: Quat::from_euler(glam::EulerRot::XYZ, 0.3, -0.2, 1.1),
            scale: Vec3::splat(2.0),
        };
        let p = Vec3::new(0.3, 0.4, -0.9);
        let back = t.inverse().transform_point(t.transform_point(p));
        assert!(back.distance(p) < 1e-5);
    }
}
