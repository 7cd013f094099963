//! [`HumanoidMap`]: which skeleton bone plays which [`HumanoidBone`] role, found from bone names
//! and the hierarchy.

use super::HumanoidError;
use super::bones::{HumanoidBone, Side};
use super::names::{classify, is_center_line, is_twist_helper};
use crate::skeleton::Skeleton;

/// The bone index of each [`HumanoidBone`] role in one skeleton (`None` where the rig lacks it).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct HumanoidMap {
    bones: [Option<usize>; HumanoidBone::COUNT],
}

/// What [`HumanoidMap::from_skeleton`] found and what it could not map.
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
    /// Roles for which several bones had a matching name; the one closest to the root was taken.
    pub ambiguous: Vec<HumanoidBone>,
}

impl MappingReport {
    /// Whether every required role was mapped.
    #[must_use]
    pub fn is_complete(&self) -> bool {
        self.missing_required.is_empty()
    }
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
    ///
    /// Limbs, hips, neck and head are found by name (see the
    /// [module documentation](crate::humanoid#bone-names)); where several bones match, the one
    /// closest to the root wins (`DEF-forearm.L` over `DEF-forearm.L.001`). Missing limb roles are
    /// then filled from the hierarchy (the bone between the upper leg and the foot is the lower
    /// leg), the hips become the common ancestor of the two upper legs, and the spine chain is
    /// every bone from the hips up to the common ancestor of the two arms: its lowest bone is
    /// the spine, the top one the upper chest (or the chest when there are only two) and one in
    /// the middle the chest, whatever the convention's numbering.
    #[must_use]
    pub fn from_skeleton(skeleton: &Skeleton) -> (Self, MappingReport) {
        let n = skeleton.len();
        let mut report = MappingReport::default();
        let mut map = Self::new();
        // Per role: (depth, number, bone index) of every bone whose name matches.
        let mut candidates: Vec<Vec<(usize, u32, usize)>> = vec![Vec::new(); HumanoidBone::COUNT];
        for i in 0..n {
            if let Some(c) = classify(&skeleton.bones()[i].name) {
                let rank = c.number.unwrap_or(0);
                candidates[c.role.index()].push((depth(skeleton, i), rank, i));
            }
        }
        for role in HumanoidBone::ALL {
            let list = &mut candidates[role.index()];
            list.sort_unstable();
            if let Some(&(_, _, i)) = list.first() {
                map.set(role, Some(i));
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
        for side in [Side::Left, Side::Right] {
            map.fill_leg(skeleton, side, &mut report);
        }
        map.fill_hips(skeleton, &mut report, &candidates);
        for side in [Side::Left, Side::Right] {
            map.fill_arm(skeleton, side, &mut report);
        }
        map.fill_torso(skeleton, &mut report);
        map.drop_inconsistent(skeleton);
        report.inferred.sort_unstable();
        report.inferred.dedup();
        report.ambiguous.retain(|&r| map.get(r).is_some());
        for role in HumanoidBone::ALL {
            if map.get(role).is_none() {
                if role.is_required() {
                    report.missing_required.push(role);
                } else {
                    report.missing_optional.push(role);
                }
            }
        }
        (map, report)
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

    fn fill_leg(&mut self, skeleton: &Skeleton, side: Side, report: &mut MappingReport) {
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

    fn fill_hips(
        &mut self,
        skeleton: &Skeleton,
        report: &mut MappingReport,
        candidates: &[Vec<(usize, u32, usize)>],
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
            && let Some(&(_, _, i)) = candidates[B::Spine.index()].first()
        {
            self.infer(B::Hips, i, report);
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

    fn fill_torso(&mut self, skeleton: &Skeleton, report: &mut MappingReport) {
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
    fn drop_inconsistent(&mut self, skeleton: &Skeleton) {
        for role in HumanoidBone::ALL {
            let (Some(b), Some(p)) = (self.get(role), self.mapped_parent(role)) else {
                continue;
            };
            let pb = self.get(p).unwrap_or(b);
            if pb == b || !skeleton.is_ancestor_or_self(pb, b) {
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
