//! [`HumanoidMap`]: which skeleton bone plays which [`HumanoidBone`] role, found from bone names
//! and the hierarchy.

use super::HumanoidError;
use super::bones::{HumanoidBone, Side};
use super::names::{classify, is_all_caps, is_center_line, is_end_marker, is_twist_helper};
use crate::skeleton::Skeleton;

/// The bone index of each [`HumanoidBone`] role in one skeleton (`None` where the rig lacks it).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct HumanoidMap {
    bones: [Option<usize>; HumanoidBone::COUNT],
}

/// What [`HumanoidMap::from_skeleton`] found and what it could not map, with reasons: show it
/// to the user (its [`Display`](core::fmt::Display) form is a readable multi-line report,
/// [`MappingReport::summary`] one line).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct MappingReport {
    /// Required roles ([`HumanoidBone::is_required`]) with no bone: the map is unusable for a
    /// full-body rig until they are set by hand.
    pub missing_required: Vec<HumanoidBone>,
    /// Optional roles with no bone (a rig without a twist bone or upper chest is normal).
    pub missing_optional: Vec<HumanoidBone>,
    /// Roles whose bone came from the hierarchy rather than from its name (for example
    /// `chest`/`upperChest` from a numbered spine, or Rigify's `spine.006` as the head).
    pub inferred: Vec<HumanoidBone>,
    /// Roles for which several bones had a matching name (see [`MappingReport::passed_over`]
    /// for the ones not taken and why).
    pub ambiguous: Vec<HumanoidBone>,
    /// Every mapped role: its bone, the bone's name and how it was found, in
    /// [`HumanoidBone::ALL`] order.
    pub mapped: Vec<RoleMapping>,
    /// Every role without a bone, and why, in [`HumanoidBone::ALL`] order.
    pub unmapped: Vec<UnmappedRole>,
    /// Bones whose names name a role but that were not taken for it, and why (control and
    /// helper bones, unskinned duplicates, mesh nodes named like joints, detached feet).
    pub passed_over: Vec<PassedOver>,
}

/// How a mapped role's bone was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum MappingSource {
    /// Given by a humanoid table ([`HumanoidMap::from_table`]), such as a VRM file's.
    Table,
    /// The bone's name names the role.
    Name,
    /// From the hierarchy: the bone sits where the role must be (the common ancestor of the
    /// legs and arms is the hips, the bone between the hand and the upper arm is the lower
    /// arm, a numbered spine is split into spine / chest / upper chest, …).
    Hierarchy,
    /// A foot role taken by the end bone of the lower leg (`LowerLeg.L_end`), because the
    /// rig's foot bone (`detached_foot`) is an IK control bone that is not below the lower leg
    /// (Quaternius exports). The solver moves the lower leg's end; the
    /// [`DetachedFeet`](super::DetachedFeet) stage moves the detached foot bone along (`bevy_ik`'s
    /// `IkHumanoid` adds one).
    LowerLegEnd {
        /// The detached foot bone.
        detached_foot: usize,
    },
}

/// One mapped role in a [`MappingReport`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct RoleMapping {
    /// The role.
    pub role: HumanoidBone,
    /// Its bone index.
    pub bone: usize,
    /// The bone's name.
    pub bone_name: String,
    /// How it was found.
    pub source: MappingSource,
}

/// Why a role has no bone.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum UnmappedReason {
    /// No bone's name names the role, and the hierarchy implies none.
    NoCandidate,
    /// A bone was found for it but does not lie below the bone of its parent role (`parent`),
    /// so it cannot be part of the limb or spine chain.
    NotBelowParent {
        /// The bone found.
        bone: usize,
        /// Its name.
        bone_name: String,
        /// The parent role it is not below.
        parent: HumanoidBone,
    },
    /// The foot bone is an IK control bone detached from the leg (a child of `parent_name`,
    /// not of the lower leg `lower_leg_name`), and the lower leg has no child (end bone) to
    /// stand in for the ankle. Add an end bone to the lower leg, or set the foot role by hand.
    DetachedControlBone {
        /// The detached foot bone.
        bone: usize,
        /// Its name.
        bone_name: String,
        /// Its parent's name (`-` for a root).
        parent_name: String,
        /// The lower leg bone.
        lower_leg: usize,
        /// The lower leg's name.
        lower_leg_name: String,
    },
}

/// One unmapped role in a [`MappingReport`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct UnmappedRole {
    /// The role.
    pub role: HumanoidBone,
    /// Whether the full-body solver needs it ([`HumanoidBone::is_required`]).
    pub required: bool,
    /// Why it has no bone.
    pub reason: UnmappedReason,
}

/// Why a bone whose name names a role was not taken for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum PassedOverReason {
    /// It is not below the bone of the role's parent role (a control or helper bone outside
    /// the hips→head / shoulder→hand / hip→foot chain).
    OffChain {
        /// The parent role.
        parent: HumanoidBone,
    },
    /// The caller said it is not skinned, and the bone taken is.
    NotSkinned,
    /// Its name is in capitals only, like a control rig's (`HEAD`), and the bone taken's is not.
    ControlName,
    /// Another bone with a matching name is nearer the root (or, at the same depth, has
    /// children where this one has none, or is listed first): a mesh node or duplicate named
    /// like the joint.
    Farther,
    /// Named as the hips, but the legs and the spine branch elsewhere: the hips were taken
    /// from the hierarchy.
    NotAtBranch,
    /// A foot bone detached from the leg (see [`UnmappedReason::DetachedControlBone`] and
    /// [`MappingSource::LowerLegEnd`]).
    DetachedControl,
}

/// One bone passed over in a [`MappingReport`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct PassedOver {
    /// The bone.
    pub bone: usize,
    /// Its name.
    pub bone_name: String,
    /// The role its name names.
    pub role: HumanoidBone,
    /// The bone taken for the role instead, if any.
    pub chosen: Option<usize>,
    /// Why it was passed over.
    pub reason: PassedOverReason,
}

/// Hints for [`HumanoidMap::from_skeleton_with`].
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct MappingOptions {
    /// Per skeleton bone, whether it is a joint of a skin (deforms a mesh). Where several bones
    /// name the same role, a skinned one is preferred over one known not to be. Bones past the
    /// end of the list count as unknown.
    pub skinned: Option<Vec<bool>>,
}

impl MappingOptions {
    /// The same options with the per-bone skinned flags.
    #[must_use]
    pub fn with_skinned(mut self, skinned: Vec<bool>) -> Self {
        self.skinned = Some(skinned);
        self
    }
}

impl MappingReport {
    /// Whether every required role was mapped.
    #[must_use]
    pub fn is_complete(&self) -> bool {
        self.missing_required.is_empty()
    }

    /// One line: how many roles were mapped (by name / from the hierarchy), and which required
    /// ones are missing. For example
    /// `"humanoid map: 22 of 24 roles (18 by name, 4 from the hierarchy); missing required: leftFoot, rightFoot"`.
    #[must_use]
    pub fn summary(&self) -> String {
        let by_name = self
            .mapped
            .iter()
            .filter(|m| m.source == MappingSource::Name)
            .count();
        let table = self
            .mapped
            .iter()
            .filter(|m| m.source == MappingSource::Table)
            .count();
        let mut s = format!(
            "humanoid map: {} of {} roles ({}{} by name, {} from the hierarchy)",
            self.mapped.len(),
            HumanoidBone::COUNT,
            if table > 0 {
                format!("{table} from the table, ")
            } else {
                String::new()
            },
            by_name,
            self.mapped.len() - by_name - table
        );
        if self.missing_required.is_empty() {
            s.push_str("; complete");
        } else {
            s.push_str("; missing required: ");
            let names: Vec<&str> = self.missing_required.iter().map(|r| r.vrm_name()).collect();
            s.push_str(&names.join(", "));
        }
        s
    }
}

impl core::fmt::Display for MappingSource {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Table => f.write_str("from the humanoid table"),
            Self::Name => f.write_str("by name"),
            Self::Hierarchy => f.write_str("from the hierarchy"),
            Self::LowerLegEnd { .. } => {
                f.write_str("the lower leg's end bone (the rig's foot is a detached IK control)")
            }
        }
    }
}

impl core::fmt::Display for UnmappedReason {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::NoCandidate => {
                f.write_str("no bone name matches, and the hierarchy implies no bone")
            }
            Self::NotBelowParent {
                bone_name, parent, ..
            } => write!(f, "`{bone_name}` is not below the {parent} bone"),
            Self::DetachedControlBone {
                bone_name,
                parent_name,
                lower_leg_name,
                ..
            } => write!(
                f,
                "`{bone_name}` is a detached IK control bone (a child of `{parent_name}`, not of \
                 the lower leg `{lower_leg_name}`), and the lower leg has no end bone to stand in \
                 for the ankle"
            ),
        }
    }
}

impl core::fmt::Display for PassedOverReason {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::OffChain { parent } => write!(
                f,
                "not below the {parent} bone (a control or helper bone off the chain)"
            ),
            Self::NotSkinned => f.write_str("not skinned, and a skinned bone has the name too"),
            Self::ControlName => f.write_str("a control-style capitals name"),
            Self::Farther => f.write_str("another bone with the name is nearer the root"),
            Self::NotAtBranch => {
                f.write_str("the legs and the spine branch elsewhere (hips from the hierarchy)")
            }
            Self::DetachedControl => {
                f.write_str("a foot bone detached from the leg (an IK control bone)")
            }
        }
    }
}

impl core::fmt::Display for MappingReport {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        writeln!(f, "{}", self.summary())?;
        for m in &self.mapped {
            writeln!(
                f,
                "  {:<20} <- `{}` (bone {}, {})",
                m.role.vrm_name(),
                m.bone_name,
                m.bone,
                m.source
            )?;
        }
        if !self.unmapped.is_empty() {
            writeln!(f, "not mapped:")?;
            for u in &self.unmapped {
                let kind = if u.required { "required" } else { "optional" };
                writeln!(f, "  {:<20} ({kind}): {}", u.role.vrm_name(), u.reason)?;
            }
        }
        if !self.passed_over.is_empty() {
            writeln!(f, "passed over:")?;
            for p in &self.passed_over {
                writeln!(
                    f,
                    "  `{}` (bone {}) for {}: {}",
                    p.bone_name,
                    p.bone,
                    p.role.vrm_name(),
                    p.reason
                )?;
            }
        }
        Ok(())
    }
}

/// A bone whose name names a role, with its ranking key: (known unskinned, depth, capitals
/// name, no children, trailing number, index); the smallest key is taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Candidate {
    unskinned: bool,
    depth: usize,
    caps: bool,
    leaf: bool,
    number: u32,
    bone: usize,
}

/// What the fill steps found out on the way, for the report.
#[derive(Default)]
struct Notes {
    /// Per role: the detached foot bone whose role the lower leg's end took, or which was left
    /// unmapped.
    detached: Vec<(HumanoidBone, usize)>,
    /// Roles dropped because their bone was not below their parent role's bone.
    dropped: Vec<(HumanoidBone, usize, HumanoidBone)>,
    /// Bones switched away from because they were off the chain.
    off_chain: Vec<(HumanoidBone, usize, HumanoidBone)>,
}

fn depth(skeleton: &Skeleton, i: usize) -> usize {
    skeleton.ancestors_inclusive(i).count()
}

fn common_ancestor(skeleton: &Skeleton, a: usize, b: usize) -> Option<usize> {
    skeleton
        .ancestors_inclusive(a)
        .find(|&x| skeleton.is_ancestor_or_self(x, b))
}

impl HumanoidMap {
    /// An empty map.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The bone index of `role`, if mapped.
    #[inline]
    #[must_use]
    pub fn get(&self, role: HumanoidBone) -> Option<usize> {
        self.bones[role.index()]
    }

    /// Sets (or clears) the bone of `role`.
    pub fn set(&mut self, role: HumanoidBone, bone: Option<usize>) {
        self.bones[role.index()] = bone;
    }

    /// Builder form of [`HumanoidMap::set`].
    #[must_use]
    pub fn with(mut self, role: HumanoidBone, bone: usize) -> Self {
        self.set(role, Some(bone));
        self
    }

    /// The mapped roles and their bones, in [`HumanoidBone::ALL`] order.
    pub fn iter(&self) -> impl Iterator<Item = (HumanoidBone, usize)> + '_ {
        HumanoidBone::ALL
            .iter()
            .filter_map(|&r| self.get(r).map(|b| (r, b)))
    }

    /// The role of bone `bone`, if it has one.
    #[must_use]
    pub fn role_of(&self, bone: usize) -> Option<HumanoidBone> {
        self.iter().find(|&(_, b)| b == bone).map(|(r, _)| r)
    }

    /// The nearest mapped ancestor role of `role` (following [`HumanoidBone::parent`] past
    /// unmapped optional roles).
    #[must_use]
    pub fn mapped_parent(&self, role: HumanoidBone) -> Option<HumanoidBone> {
        let mut p = role.parent();
        while let Some(r) = p {
            if self.get(r).is_some() {
                return Some(r);
            }
            p = r.parent();
        }
        None
    }

    /// Builds a map from the bone names of `skeleton` and its hierarchy, reporting what it could
    /// not map. Never fails: an unusable rig shows up as [`MappingReport::missing_required`].
    /// The same as [`HumanoidMap::from_skeleton_with`] without hints.
    ///
    /// Limbs, hips, neck and head are found by name (see the
    /// [module documentation](crate::humanoid#bone-names)); where several bones match, the one
    /// on the chain wins: a bone below its parent role's bone (the real `head` below the neck
    /// over a `HEAD` control bone parented to the root), then a skinned one (when the caller
    /// says which are), then the one closest to the root (`DEF-forearm.L` over
    /// `DEF-forearm.L.001`), then one whose name is not in capitals only, then one with
    /// children over a childless one (a mesh node named like its joint). Missing limb roles are
    /// then filled from the hierarchy (the bone between the upper leg and the foot is the lower
    /// leg), the hips become the common ancestor of the two upper legs, and the spine chain is
    /// every bone from the hips up to the common ancestor of the two arms: its lowest bone is
    /// the spine, the top one the upper chest (or the chest when there are only two) and one in
    /// the middle the chest, whatever the convention's numbering.
    ///
    /// A foot bone that is not below the lower leg (an IK control bone parented to the root,
    /// as in Quaternius exports) is not taken: the foot role goes to the lower leg's end bone
    /// (a child of the lower leg, preferably named `…_end` / `…_leaf` / `…_tip`) when there is
    /// one ([`MappingSource::LowerLegEnd`]), and is otherwise reported unmapped with
    /// [`UnmappedReason::DetachedControlBone`].
    #[must_use]
    pub fn from_skeleton(skeleton: &Skeleton) -> (Self, MappingReport) {
        Self::from_skeleton_with(skeleton, &MappingOptions::default())
    }

    /// A map from a humanoid table (role → bone index), such as the `humanoid.humanBones` table
    /// of a VRM file (use [`HumanoidBone::from_vrm_name`] for its keys): the table's entries are
    /// taken as given ([`MappingSource::Table`]); roles it lacks are filled as
    /// [`HumanoidMap::from_skeleton_with`] would, where that agrees with the table's bones.
    /// Entries out of range, and roles whose bone is not below their parent role's bone, are
    /// reported unmapped ([`UnmappedReason::NotBelowParent`] for the latter).
    #[must_use]
    pub fn from_table(
        skeleton: &Skeleton,
        table: &[(HumanoidBone, usize)],
        options: &MappingOptions,
    ) -> (Self, MappingReport) {
        let (by_name, named) = Self::from_skeleton_with(skeleton, options);
        let mut map = Self::new();
        let in_table = |r: HumanoidBone| {
            table
                .iter()
                .rev()
                .find(|&&(t, b)| t == r && b < skeleton.len())
                .map(|&(_, b)| b)
        };
        for role in HumanoidBone::ALL {
            map.set(role, in_table(role).or_else(|| by_name.get(role)));
        }
        // A name-found bone must not repeat a table bone under another role.
        for role in HumanoidBone::ALL {
            if in_table(role).is_none()
                && let Some(b) = map.get(role)
                && table.iter().any(|&(_, t)| t == b)
            {
                map.set(role, None);
            }
        }
        let mut notes = Notes::default();
        map.drop_inconsistent(skeleton, &mut notes);
        let mut report = MappingReport::default();
        let name = |b: usize| skeleton.bones()[b].name.clone();
        for role in HumanoidBone::ALL {
            if let Some(bone) = map.get(role) {
                let source = if in_table(role).is_some() {
                    MappingSource::Table
                } else {
                    named
                        .mapped
                        .iter()
                        .find(|m| m.role == role)
                        .map_or(MappingSource::Name, |m| m.source)
                };
                if source == MappingSource::Hierarchy {
                    report.inferred.push(role);
                }
                report.mapped.push(RoleMapping {
                    role,
                    bone,
                    bone_name: name(bone),
                    source,
                });
                continue;
            }
            if role.is_required() {
                report.missing_required.push(role);
            } else {
                report.missing_optional.push(role);
            }
            let reason = match notes.dropped.iter().find(|&&(r, _, _)| r == role) {
                Some(&(_, bone, parent)) => UnmappedReason::NotBelowParent {
                    bone,
                    bone_name: name(bone),
                    parent,
                },
                None => named
                    .unmapped
                    .iter()
                    .find(|u| u.role == role)
                    .map_or(UnmappedReason::NoCandidate, |u| u.reason.clone()),
            };
            report.unmapped.push(UnmappedRole {
                role,
                required: role.is_required(),
                reason,
            });
        }
        report.passed_over = named
            .passed_over
            .into_iter()
            .filter(|p| in_table(p.role).is_none())
            .collect();
        (map, report)
    }

    /// [`HumanoidMap::from_skeleton`] with hints (which bones are skinned).
    #[must_use]
    pub fn from_skeleton_with(
        skeleton: &Skeleton,
        options: &MappingOptions,
    ) -> (Self, MappingReport) {
        let n = skeleton.len();
        let mut report = MappingReport::default();
        let mut notes = Notes::default();
        let mut map = Self::new();
        let skinned = |i: usize| options.skinned.as_ref().and_then(|s| s.get(i).copied());
        let mut candidates: Vec<Vec<Candidate>> = vec![Vec::new(); HumanoidBone::COUNT];
        for i in 0..n {
            let name = &skeleton.bones()[i].name;
            if let Some(c) = classify(name) {
                candidates[c.role.index()].push(Candidate {
                    unskinned: skinned(i) == Some(false),
                    depth: depth(skeleton, i),
                    caps: is_all_caps(name),
                    leaf: skeleton.children(i).next().is_none(),
                    number: c.number.unwrap_or(0),
                    bone: i,
                });
            }
        }
        for role in HumanoidBone::ALL {
            let list = &mut candidates[role.index()];
            list.sort_unstable();
            if let Some(c) = list.first() {
                map.set(role, Some(c.bone));
                if list.len() > 1 && !matches!(role, HumanoidBone::Spine | HumanoidBone::Neck) {
                    report.ambiguous.push(role);
                }
            }
        }
        // Spine-family names are resolved from the hierarchy below.
        for r in [
            HumanoidBone::Spine,
            HumanoidBone::Chest,
            HumanoidBone::UpperChest,
        ] {
            map.set(r, None);
        }
        map.take_candidates_on_chain(skeleton, &candidates, &mut notes);
        for side in [Side::Left, Side::Right] {
            map.fill_leg(skeleton, side, &mut report, &mut notes);
        }
        map.fill_hips(skeleton, &mut report, &candidates);
        for side in [Side::Left, Side::Right] {
            map.fill_arm(skeleton, side, &mut report);
        }
        map.fill_torso(skeleton, &mut report, &candidates, &mut notes);
        map.take_candidates_on_chain(skeleton, &candidates, &mut notes);
        map.drop_inconsistent(skeleton, &mut notes);
        report.inferred.sort_unstable();
        report.inferred.dedup();
        report.ambiguous.retain(|&r| map.get(r).is_some());
        map.write_report(skeleton, &candidates, &notes, &mut report);
        (map, report)
    }

    /// End bones to add under the lower legs of a rig whose feet are detached IK control bones
    /// with nothing to stand in for the ankle ([`UnmappedReason::DetachedControlBone`] in
    /// `report`): one bone per such leg, named `<lower leg>_end`, parented to the lower leg and
    /// placed at the detached foot's rest position. Append them to the skeleton's bones
    /// (their indices follow the existing ones, so nothing else moves) and map again: the
    /// foot roles then take them ([`MappingSource::LowerLegEnd`]), and a solver moves the
    /// legs so that those ends reach the foot goals; a [`DetachedFeet`](super::DetachedFeet)
    /// stage after the solver moves the detached foot bones along. Empty when no foot is
    /// detached.
    #[must_use]
    pub fn lower_leg_ends_for_detached_feet(
        skeleton: &Skeleton,
        report: &MappingReport,
    ) -> Vec<crate::skeleton::Bone> {
        let rest = skeleton.rest_model_transforms();
        report
            .unmapped
            .iter()
            .filter_map(|u| match &u.reason {
                UnmappedReason::DetachedControlBone {
                    bone,
                    lower_leg,
                    lower_leg_name,
                    ..
                } => {
                    let (leg, bone) = (*lower_leg, *bone);
                    if leg >= skeleton.len() || bone >= skeleton.len() {
                        return None;
                    }
                    let local = rest[leg].inverse().transform_point(rest[bone].translation);
                    (local.is_finite() && local.length() > 1e-6).then(|| {
                        crate::skeleton::Bone::new(
                            format!("{lower_leg_name}_end"),
                            Some(leg),
                            crate::pose::BoneTransform::from_translation(local),
                        )
                    })
                }
                _ => None,
            })
            .collect()
    }

    /// Fills the report's role-by-role lists from the map, the candidates and the notes.
    fn write_report(
        &self,
        skeleton: &Skeleton,
        candidates: &[Vec<Candidate>],
        notes: &Notes,
        report: &mut MappingReport,
    ) {
        let name = |b: usize| skeleton.bones()[b].name.clone();
        for role in HumanoidBone::ALL {
            let detached = notes
                .detached
                .iter()
                .find(|&&(r, _)| r == role)
                .map(|&(_, b)| b);
            match self.get(role) {
                Some(bone) => {
                    let source = if let Some(d) = detached {
                        MappingSource::LowerLegEnd { detached_foot: d }
                    } else if report.inferred.contains(&role) {
                        MappingSource::Hierarchy
                    } else {
                        MappingSource::Name
                    };
                    report.mapped.push(RoleMapping {
                        role,
                        bone,
                        bone_name: name(bone),
                        source,
                    });
                }
                None => {
                    if role.is_required() {
                        report.missing_required.push(role);
                    } else {
                        report.missing_optional.push(role);
                    }
                    let dropped = notes.dropped.iter().find(|&&(r, _, _)| r == role);
                    let leg_role = HumanoidBone::LeftLowerLeg.on(role.side().unwrap_or(Side::Left));
                    let reason = match (detached, dropped, self.get(leg_role)) {
                        (Some(bone), _, Some(leg)) => UnmappedReason::DetachedControlBone {
                            bone,
                            bone_name: name(bone),
                            parent_name: skeleton.parent(bone).map_or_else(|| "-".into(), name),
                            lower_leg: leg,
                            lower_leg_name: name(leg),
                        },
                        (_, Some(&(_, bone, parent)), _) => UnmappedReason::NotBelowParent {
                            bone,
                            bone_name: name(bone),
                            parent,
                        },
                        _ => UnmappedReason::NoCandidate,
                    };
                    report.unmapped.push(UnmappedRole {
                        role,
                        required: role.is_required(),
                        reason,
                    });
                }
            }
            // Bones that name the role but were not taken (numbered spines and necks are
            // many by design).
            if matches!(
                role,
                HumanoidBone::Spine
                    | HumanoidBone::Chest
                    | HumanoidBone::UpperChest
                    | HumanoidBone::Neck
            ) {
                continue;
            }
            let chosen = self.get(role);
            let chosen_c = candidates[role.index()]
                .iter()
                .find(|c| Some(c.bone) == chosen);
            for c in &candidates[role.index()] {
                if Some(c.bone) == chosen {
                    continue;
                }
                let off = notes
                    .off_chain
                    .iter()
                    .chain(&notes.dropped)
                    .find(|&&(r, b, _)| r == role && b == c.bone);
                let below = |p: HumanoidBone| {
                    self.get(p)
                        .is_none_or(|pb| pb != c.bone && skeleton.is_ancestor_or_self(pb, c.bone))
                };
                let reason = if detached == Some(c.bone) {
                    PassedOverReason::DetachedControl
                } else if role == HumanoidBone::Hips && report.inferred.contains(&role) {
                    PassedOverReason::NotAtBranch
                } else if let Some(&(_, _, parent)) = off {
                    PassedOverReason::OffChain { parent }
                } else if let Some(p) = self.mapped_parent(role).filter(|&p| !below(p)) {
                    PassedOverReason::OffChain { parent: p }
                } else if chosen_c.is_some_and(|k| c.unskinned && !k.unskinned) {
                    PassedOverReason::NotSkinned
                } else if chosen_c.is_some_and(|k| c.caps && !k.caps) {
                    PassedOverReason::ControlName
                } else {
                    PassedOverReason::Farther
                };
                report.passed_over.push(PassedOver {
                    bone: c.bone,
                    bone_name: name(c.bone),
                    role,
                    chosen,
                    reason,
                });
            }
        }
    }

    /// For every role (parents first) whose bone is not below its mapped parent role's bone,
    /// takes the best other name candidate that is.
    fn take_candidates_on_chain(
        &mut self,
        skeleton: &Skeleton,
        candidates: &[Vec<Candidate>],
        notes: &mut Notes,
    ) {
        for role in HumanoidBone::ALL {
            let (Some(b), Some(p)) = (self.get(role), self.mapped_parent(role)) else {
                continue;
            };
            let Some(pb) = self.get(p) else { continue };
            let below = |x: usize| x != pb && skeleton.is_ancestor_or_self(pb, x);
            if below(b) {
                continue;
            }
            if let Some(c) = candidates[role.index()].iter().find(|c| below(c.bone)) {
                notes.off_chain.push((role, b, p));
                self.set(role, Some(c.bone));
            }
        }
    }

    fn infer(&mut self, role: HumanoidBone, bone: usize, report: &mut MappingReport) {
        if self.get(role).is_none() {
            self.set(role, Some(bone));
            report.inferred.push(role);
        }
    }

    /// The parent of `bone`, skipping twist/roll helpers.
    fn limb_parent(skeleton: &Skeleton, bone: usize) -> Option<usize> {
        let mut p = skeleton.parent(bone)?;
        while is_twist_helper(&skeleton.bones()[p].name) {
            p = skeleton.parent(p)?;
        }
        Some(p)
    }

    fn fill_leg(
        &mut self,
        skeleton: &Skeleton,
        side: Side,
        report: &mut MappingReport,
        notes: &mut Notes,
    ) {
        use HumanoidBone as B;
        let (upper, lower, foot) = (
            B::LeftUpperLeg.on(side),
            B::LeftLowerLeg.on(side),
            B::LeftFoot.on(side),
        );
        // Mixamo's `LeftLeg` is the lower leg; a rig that calls its thigh `Leg` and has no
        // upper-leg name is recognised by the lower leg being the direct child of the hips.
        if self.get(upper).is_none()
            && let (Some(l), Some(f)) = (self.get(lower), self.get(foot))
            && Self::limb_parent(skeleton, f) != Some(l)
            && skeleton.is_ancestor_or_self(l, f)
        {
            self.set(upper, Some(l));
            self.set(lower, None);
            report.inferred.push(upper);
        }
        // A foot bone that is not below the named lower leg, on a leg whose upper and lower
        // bones are chained: a detached IK control bone. The lower leg's end stands in for it.
        if let (Some(f), Some(l)) = (self.get(foot), self.get(lower))
            && !skeleton.is_ancestor_or_self(l, f)
            && self
                .get(upper)
                .is_none_or(|u| u != l && skeleton.is_ancestor_or_self(u, l))
        {
            notes.detached.push((foot, f));
            self.set(foot, Self::lower_leg_end(skeleton, l));
            return;
        }
        if let Some(f) = self.get(foot) {
            if self.get(lower).is_none()
                && let Some(p) = Self::limb_parent(skeleton, f)
                && self.get(upper) != Some(p)
            {
                self.infer(lower, p, report);
            }
            if self.get(upper).is_none()
                && let Some(l) = self.get(lower)
                && let Some(p) = Self::limb_parent(skeleton, l)
            {
                self.infer(upper, p, report);
            }
        }
    }

    /// The child of the lower leg `l` that marks its end: one named as an end (`…_end`,
    /// `…_leaf`, `…_tip`), else its only child that names no role, if it is away from `l`.
    fn lower_leg_end(skeleton: &Skeleton, l: usize) -> Option<usize> {
        let away = |c: &usize| skeleton.bones()[*c].rest.translation.length() > 1e-6;
        let name = |c: usize| skeleton.bones()[c].name.as_str();
        if let Some(c) = skeleton
            .children(l)
            .filter(away)
            .find(|&c| is_end_marker(name(c)))
        {
            return Some(c);
        }
        let mut plain = skeleton
            .children(l)
            .filter(|&c| classify(name(c)).is_none() && !is_twist_helper(name(c)))
            .filter(away);
        match (plain.next(), plain.next()) {
            (Some(c), None) => Some(c),
            _ => None,
        }
    }

    fn fill_hips(
        &mut self,
        skeleton: &Skeleton,
        report: &mut MappingReport,
        candidates: &[Vec<Candidate>],
    ) {
        use HumanoidBone as B;
        // The pelvis is where the legs and the torso branch: the common ancestor of the limb
        // roots (a bone named `hips` elsewhere, or none at all, is overridden).
        let roots = [
            self.get(B::LeftUpperLeg),
            self.get(B::RightUpperLeg),
            self.get(B::LeftShoulder).or(self.get(B::LeftUpperArm)),
            self.get(B::RightShoulder).or(self.get(B::RightUpperArm)),
        ];
        let legs = roots[0].is_some() && roots[1].is_some();
        let mut ca: Option<usize> = None;
        for r in roots.into_iter().flatten() {
            ca = match ca {
                None => Some(r),
                Some(c) => common_ancestor(skeleton, c, r),
            };
            if ca.is_none() {
                break;
            }
        }
        if legs
            && let Some(c) = ca
            && roots.iter().all(|&r| r != Some(c))
        {
            if self.get(B::Hips) != Some(c) {
                self.set(B::Hips, Some(c));
                report.inferred.push(B::Hips);
            }
            return;
        }
        if self.get(B::Hips).is_none()
            && let Some(c) = candidates[B::Spine.index()].first()
        {
            self.infer(B::Hips, c.bone, report);
        }
    }

    fn fill_arm(&mut self, skeleton: &Skeleton, side: Side, report: &mut MappingReport) {
        use HumanoidBone as B;
        let (shoulder, upper, lower, hand) = (
            B::LeftShoulder.on(side),
            B::LeftUpperArm.on(side),
            B::LeftLowerArm.on(side),
            B::LeftHand.on(side),
        );
        let Some(h) = self.get(hand) else { return };
        if self.get(lower).is_none()
            && let Some(p) = Self::limb_parent(skeleton, h)
            && self.get(upper) != Some(p)
        {
            self.infer(lower, p, report);
        }
        if self.get(upper).is_none()
            && let Some(l) = self.get(lower)
            && let Some(p) = Self::limb_parent(skeleton, l)
            && self.get(shoulder) != Some(p)
            && !is_center_line(&skeleton.bones()[p].name)
        {
            self.infer(upper, p, report);
        }
        let twist = B::LeftLowerArmTwist.on(side);
        if let (Some(t), Some(l)) = (self.get(twist), self.get(lower))
            && skeleton.parent(t) != Some(l)
            && !skeleton.is_ancestor_or_self(l, t)
        {
            self.set(twist, None);
        }
    }

    fn fill_torso(
        &mut self,
        skeleton: &Skeleton,
        report: &mut MappingReport,
        candidates: &[Vec<Candidate>],
        notes: &mut Notes,
    ) {
        use HumanoidBone as B;
        let Some(hips) = self.get(B::Hips) else {
            return;
        };
        let arm_root = |s: Side| {
            self.get(B::LeftShoulder.on(s))
                .or(self.get(B::LeftUpperArm.on(s)))
        };
        let branch = match (arm_root(Side::Left), arm_root(Side::Right)) {
            (Some(l), Some(r)) => common_ancestor(skeleton, l, r),
            (Some(a), None) | (None, Some(a)) => skeleton.parent(a),
            (None, None) => self
                .get(B::Neck)
                .or(self.get(B::Head))
                .and_then(|x| skeleton.parent(x)),
        };
        let Some(branch) = branch else { return };
        if branch == hips || !skeleton.is_ancestor_or_self(hips, branch) {
            return;
        }
        let mut path: Vec<usize> = skeleton
            .ancestors_inclusive(branch)
            .take_while(|&i| i != hips)
            .collect();
        path.reverse();
        let k = path.len();
        self.infer(B::Spine, path[0], report);
        if k == 2 {
            self.infer(B::Chest, path[1], report);
        } else if k >= 3 {
            self.infer(B::Chest, path[(k - 1) / 2], report);
            self.infer(B::UpperChest, path[k - 1], report);
        }
        // Neck and head: the centre-line chain above the branch.
        let mut chain = Vec::new();
        let mut cur = branch;
        loop {
            let next = skeleton.children(cur).find(|&c| {
                is_center_line(&skeleton.bones()[c].name)
                    || self.get(B::Neck) == Some(c)
                    || self.get(B::Head) == Some(c)
            });
            match next {
                Some(c) => {
                    chain.push(c);
                    cur = c;
                }
                None => break,
            }
        }
        // A named neck or head off the centre chain (a control bone such as `HEAD` under the
        // root) gives way to a candidate on it.
        for role in [B::Neck, B::Head] {
            if let Some(b) = self.get(role)
                && !chain.contains(&b)
                && let Some(c) = candidates[role.index()]
                    .iter()
                    .find(|c| chain.contains(&c.bone))
            {
                notes.off_chain.push((role, b, B::Spine));
                self.set(role, Some(c.bone));
            }
        }
        let head_named = self.get(B::Head).filter(|h| chain.contains(h));
        if head_named.is_none()
            && self.get(B::Head).is_none()
            && let Some(&last) = chain.last()
        {
            self.infer(B::Head, last, report);
        }
        if self.get(B::Neck).is_none()
            && let (Some(&first), Some(h)) = (chain.first(), self.get(B::Head))
            && first != h
        {
            self.infer(B::Neck, first, report);
        }
    }

    /// Clears roles whose bone is not below the bone of their mapped parent role.
    fn drop_inconsistent(&mut self, skeleton: &Skeleton, notes: &mut Notes) {
        for role in HumanoidBone::ALL {
            let (Some(b), Some(p)) = (self.get(role), self.mapped_parent(role)) else {
                continue;
            };
            let pb = self.get(p).unwrap_or(b);
            if pb == b || !skeleton.is_ancestor_or_self(pb, b) {
                notes.dropped.push((role, b, p));
                self.set(role, None);
            }
        }
    }

    /// Checks that every required role is mapped, every index is in range and every mapped role
    /// lies strictly below its mapped parent role.
    ///
    /// # Errors
    /// [`HumanoidError::MissingBone`], [`HumanoidError::BoneOutOfRange`] or
    /// [`HumanoidError::BadHierarchy`].
    pub fn validate(&self, skeleton: &Skeleton) -> Result<(), HumanoidError> {
        for role in HumanoidBone::ALL {
            match self.get(role) {
                None if role.is_required() => return Err(HumanoidError::MissingBone(role)),
                None => {}
                Some(b) if b >= skeleton.len() => {
                    return Err(HumanoidError::BoneOutOfRange {
                        role,
                        index: b,
                        len: skeleton.len(),
                    });
                }
                Some(b) => {
                    if let Some(p) = self.mapped_parent(role) {
                        let pb = self.get(p).unwrap_or(b);
                        if pb == b || !skeleton.is_ancestor_or_self(pb, b) {
                            return Err(HumanoidError::BadHierarchy { role, parent: p });
                        }
                    }
                }
            }
        }
        Ok(())
    }
}
