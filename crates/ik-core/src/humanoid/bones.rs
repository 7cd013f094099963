//! The humanoid bone set ([`HumanoidBone`]), modelled on the VRM humanoid bones.

/// Which side of the body a bone is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Side {
    /// The character's own left.
    Left,
    /// The character's own right.
    Right,
}

impl Side {
    /// The other side.
    #[must_use]
    pub const fn opposite(self) -> Self {
        match self {
            Self::Left => Self::Right,
            Self::Right => Self::Left,
        }
    }
}

/// A humanoid bone role (the VRM humanoid set without fingers and eyes, plus a forearm twist bone).
///
/// The role hierarchy (see [`HumanoidBone::parent`]) is
/// hips → spine → chest → upper chest → neck → head; upper chest → shoulder (clavicle) → upper
/// arm → lower arm (forearm) → hand; hips → upper leg → lower leg → foot → toes. The optional
/// forearm twist bone is a child of the lower arm, either between it and the hand or beside it
/// (Unreal's `lowerarm_twist_01_l` is a leaf).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[allow(missing_docs)]
pub enum HumanoidBone {
    Hips,
    Spine,
    Chest,
    UpperChest,
    Neck,
    Head,
    LeftShoulder,
    LeftUpperArm,
    LeftLowerArm,
    LeftLowerArmTwist,
    LeftHand,
    RightShoulder,
    RightUpperArm,
    RightLowerArm,
    RightLowerArmTwist,
    RightHand,
    LeftUpperLeg,
    LeftLowerLeg,
    LeftFoot,
    LeftToes,
    RightUpperLeg,
    RightLowerLeg,
    RightFoot,
    RightToes,
}

impl HumanoidBone {
    /// Number of roles.
    pub const COUNT: usize = 24;

    /// Every role, parents before children, in declaration order (`ALL[b.index()] == b`).
    pub const ALL: [Self; Self::COUNT] = [
        Self::Hips,
        Self::Spine,
        Self::Chest,
        Self::UpperChest,
        Self::Neck,
        Self::Head,
        Self::LeftShoulder,
        Self::LeftUpperArm,
        Self::LeftLowerArm,
        Self::LeftLowerArmTwist,
        Self::LeftHand,
        Self::RightShoulder,
        Self::RightUpperArm,
        Self::RightLowerArm,
        Self::RightLowerArmTwist,
        Self::RightHand,
        Self::LeftUpperLeg,
        Self::LeftLowerLeg,
        Self::LeftFoot,
        Self::LeftToes,
        Self::RightUpperLeg,
        Self::RightLowerLeg,
        Self::RightFoot,
        Self::RightToes,
    ];

    /// Position of this role in [`HumanoidBone::ALL`].
    #[must_use]
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The VRM humanoid bone name (`leftUpperArm`, `hips`, …); `leftLowerArmTwist` for the
    /// twist bone, which VRM does not have.
    #[must_use]
    pub const fn vrm_name(self) -> &'static str {
        match self {
            Self::Hips => "hips",
            Self::Spine => "spine",
            Self::Chest => "chest",
            Self::UpperChest => "upperChest",
            Self::Neck => "neck",
            Self::Head => "head",
            Self::LeftShoulder => "leftShoulder",
            Self::LeftUpperArm => "leftUpperArm",
            Self::LeftLowerArm => "leftLowerArm",
            Self::LeftLowerArmTwist => "leftLowerArmTwist",
            Self::LeftHand => "leftHand",
            Self::RightShoulder => "rightShoulder",
            Self::RightUpperArm => "rightUpperArm",
            Self::RightLowerArm => "rightLowerArm",
            Self::RightLowerArmTwist => "rightLowerArmTwist",
            Self::RightHand => "rightHand",
            Self::LeftUpperLeg => "leftUpperLeg",
            Self::LeftLowerLeg => "leftLowerLeg",
            Self::LeftFoot => "leftFoot",
            Self::LeftToes => "leftToes",
            Self::RightUpperLeg => "rightUpperLeg",
            Self::RightLowerLeg => "rightLowerLeg",
            Self::RightFoot => "rightFoot",
            Self::RightToes => "rightToes",
        }
    }

    /// The side of the body, `None` for the centre line (hips, spine, …, head).
    #[must_use]
    pub const fn side(self) -> Option<Side> {
        match self.index() {
            6..=10 | 16..=19 => Some(Side::Left),
            11..=15 | 20..=23 => Some(Side::Right),
            _ => None,
        }
    }

    /// The same role on the other side (centre roles map to themselves).
    #[must_use]
    pub const fn mirror(self) -> Self {
        match self.index() {
            6..=10 | 16..=19 => Self::ALL[self.index() + 5 - (self.index() >= 16) as usize],
            11..=15 => Self::ALL[self.index() - 5],
            20..=23 => Self::ALL[self.index() - 4],
            _ => self,
        }
    }

    /// The role on `side` with the same limb position as `self` (`LeftHand.on(Right)` is
    /// `RightHand`); centre roles are returned unchanged.
    #[must_use]
    pub const fn on(self, side: Side) -> Self {
        match (self.side(), side) {
            (Some(Side::Left), Side::Right) | (Some(Side::Right), Side::Left) => self.mirror(),
            _ => self,
        }
    }

    /// The parent role in the humanoid hierarchy, `None` for the hips. Optional roles are
    /// included: a map may skip them (see [`HumanoidBone::is_required`]).
    #[must_use]
    pub const fn parent(self) -> Option<Self> {
        Some(match self {
            Self::Hips => return None,
            Self::Spine | Self::LeftUpperLeg | Self::RightUpperLeg => Self::Hips,
            Self::Chest => Self::Spine,
            Self::UpperChest => Self::Chest,
            Self::Neck | Self::LeftShoulder | Self::RightShoulder => Self::UpperChest,
            Self::Head => Self::Neck,
            Self::LeftUpperArm => Self::LeftShoulder,
            Self::RightUpperArm => Self::RightShoulder,
            Self::LeftLowerArm => Self::LeftUpperArm,
            Self::RightLowerArm => Self::RightUpperArm,
            Self::LeftLowerArmTwist | Self::LeftHand => Self::LeftLowerArm,
            Self::RightLowerArmTwist | Self::RightHand => Self::RightLowerArm,
            Self::LeftLowerLeg => Self::LeftUpperLeg,
            Self::RightLowerLeg => Self::RightUpperLeg,
            Self::LeftFoot => Self::LeftLowerLeg,
            Self::RightFoot => Self::RightLowerLeg,
            Self::LeftToes => Self::LeftFoot,
            Self::RightToes => Self::RightFoot,
        })
    }

    /// Whether a humanoid map must contain this role (the VRM 1.0 required set: hips, spine,
    /// head, and both upper/lower arms, hands, upper/lower legs and feet).
    #[must_use]
    pub const fn is_required(self) -> bool {
        !matches!(
            self,
            Self::Chest
                | Self::UpperChest
                | Self::Neck
                | Self::LeftShoulder
                | Self::RightShoulder
                | Self::LeftLowerArmTwist
                | Self::RightLowerArmTwist
                | Self::LeftToes
                | Self::RightToes
        )
    }

    /// Recognises a bone name from common rigging conventions; see the
    /// [module documentation](crate::humanoid#bone-names) for the rules.
    ///
    /// Numbered spine bones (`Spine1`, `spine_03`, `spine.002`) all return
    /// [`HumanoidBone::Spine`]: conventions number the spine differently, so
    /// [`HumanoidMap::from_skeleton`](crate::humanoid::HumanoidMap::from_skeleton) assigns
    /// chest and upper chest from the hierarchy instead.
    #[must_use]
    pub fn from_bone_name(name: &str) -> Option<Self> {
        super::names::classify(name).map(|c| c.role)
    }

    /// The role with this exact VRM humanoid bone name (`hips`, `leftUpperArm`, …, as
    /// [`HumanoidBone::vrm_name`] writes it; the keys of a VRM file's
    /// `humanoid.humanBones` table, 0.x and 1.0 alike). `None` for VRM bones this crate has no
    /// role for (fingers, eyes, jaw).
    #[must_use]
    pub fn from_vrm_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.vrm_name() == name)
    }
}

impl core::fmt::Display for HumanoidBone {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.vrm_name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_is_indexed_and_mirror_is_an_involution() {
        for (i, b) in HumanoidBone::ALL.iter().enumerate() {
            assert_eq!(b.index(), i);
            assert_eq!(b.mirror().mirror(), *b);
            assert_eq!(b.mirror().side(), b.side().map(Side::opposite));
            if let Some(p) = b.parent() {
                assert!(p.index() < b.index(), "{b} before its parent {p}");
                assert!(p.side().is_none() || p.side() == b.side());
            }
        }
        assert_eq!(HumanoidBone::LeftToes.mirror(), HumanoidBone::RightToes);
        assert_eq!(HumanoidBone::LeftHand.mirror(), HumanoidBone::RightHand);
        assert_eq!(
            HumanoidBone::LeftHand.on(Side::Left),
            HumanoidBone::LeftHand
        );
    }
}
