//! Building a [`FullBodySolver`] from a skeleton and its [`HumanoidMap`] (joints, limbs, mass
//! segments, the look-at chain), and its public entry points.

use super::*;

impl FullBodySolver {
    /// Builds the solver for `skeleton` with the anatomical default limits and de Leva masses
    /// (70 kg).
    ///
    /// # Errors
    /// [`HumanoidMap::validate`]'s errors and [`HumanoidLimits::anatomical`]'s.
    pub fn new(skeleton: &Skeleton, map: &HumanoidMap) -> Result<Self, HumanoidError> {
        map.validate(skeleton)?;
        let limits = HumanoidLimits::anatomical(skeleton, map)?;
        Self::with_limits(skeleton, map, limits)
    }

    /// Builds the solver with custom limits (for example [`HumanoidLimits::anatomical`] with
    /// some roles overridden). A role whose limit is a [`JointLimit::Hinge`] becomes a 1-DOF
    /// joint about that axis, [`JointLimit::Locked`] removes the joint, anything else is a ball.
    ///
    /// # Errors
    /// [`HumanoidMap::validate`]'s errors, [`HumanoidError::MissingBone`] /
    /// [`HumanoidError::DegenerateBodyFrame`] from the body frame and
    /// [`HumanoidError::ZeroLengthBone`] for a head without a direction.
    pub fn with_limits(
        skeleton: &Skeleton,
        map: &HumanoidMap,
        limits: HumanoidLimits,
    ) -> Result<Self, HumanoidError> {
        map.validate(skeleton)?;
        limits.validate()?;
        let model = skeleton.rest_model_transforms();
        let frame = BodyFrame::from_model(&model, map)?;
        let req = |r: B| map.get(r).ok_or(HumanoidError::MissingBone(r));
        let effector_bones = [
            req(B::LeftHand)?,
            req(B::RightHand)?,
            req(B::LeftFoot)?,
            req(B::RightFoot)?,
            req(B::Hips)?,
        ];
        let head = req(B::Head)?;
        let head_aim = (model[head].rotation.inverse() * frame.forward).normalize();
        let mut targets = [0usize; 6];
        targets[..5].copy_from_slice(&effector_bones);
        targets[5] = head;
        let masses = HumanoidMasses::de_leva(70.0, map);
        let mut segments = Vec::new();
        for (role, bone) in map.iter() {
            if de_leva_fraction(role) <= 0.0 && !matches!(role, B::Chest | B::UpperChest | B::Neck)
            {
                continue;
            }
            let child = segment_child(skeleton, map, role);
            let local_point = child.map_or(Vec3::ZERO, |c| {
                model[bone].inverse().transform_point(model[c].translation)
                    * de_leva_com_ratio(role)
            });
            segments.push(Segment {
                role,
                bone,
                local_point,
            });
        }
        let mut joints = Vec::new();
        let mut cols = 0;
        // Joints in bone order (parents first), so steps can be applied in one pass.
        let mut roles: Vec<(usize, B)> = map
            .iter()
            .filter(|&(r, _)| !matches!(r, B::LeftToes | B::RightToes))
            .map(|(r, b)| (b, r))
            .collect();
        roles.sort_unstable();
        for (bone, role) in roles {
            let limit = limits.get(role);
            let dof = if role == B::Hips {
                Dof::Floating
            } else {
                match limit {
                    JointLimit::Locked => continue,
                    JointLimit::Hinge { axis, .. } => Dof::Hinge(axis),
                    _ => Dof::Ball,
                }
            };
            let mut affects = 0u8;
            for (k, &t) in targets.iter().enumerate() {
                if skeleton.is_ancestor_or_self(bone, t) {
                    affects |= 1 << k;
                }
            }
            let mut seg_mask = 0u32;
            for (i, seg) in segments.iter().enumerate() {
                if skeleton.is_ancestor_or_self(bone, seg.bone) {
                    seg_mask |= 1 << i;
                }
            }
            if seg_mask != 0 {
                affects |= 1 << 6;
            }
            if affects == 0 {
                continue;
            }
            joints.push(Joint {
                bone,
                role,
                dof,
                col: cols,
                limit,
                affects,
                segments: seg_mask,
                limb: 0,
            });
            cols += match dof {
                Dof::Floating => 6,
                Dof::Ball => 3,
                Dof::Hinge(_) => 1,
            };
        }
        let mut limbs = Vec::new();
        for (k, side) in [
            (0, Side::Left),
            (1, Side::Right),
            (2, Side::Left),
            (3, Side::Right),
        ] {
            let (u, l, t, e) = if k < 2 {
                (
                    B::LeftUpperArm,
                    B::LeftLowerArm,
                    Some(B::LeftLowerArmTwist),
                    B::LeftHand,
                )
            } else {
                (B::LeftUpperLeg, B::LeftLowerLeg, None, B::LeftFoot)
            };
            let (upper, lower, end) = (req(u.on(side))?, req(l.on(side))?, req(e.on(side))?);
            let twist = t
                .and_then(|t| map.get(t.on(side)))
                .filter(|&tb| skeleton.is_ancestor_or_self(tb, end) && tb != end);
            let hinge = matches!(limits.get(l.on(side)), JointLimit::Hinge { .. });
            if !hinge {
                continue;
            }
            let mut path: Vec<usize> = skeleton
                .ancestors_inclusive(end)
                .take_while(|&b| b != upper)
                .collect();
            path.push(upper);
            path.reverse();
            let reach = model[upper].translation.distance(model[lower].translation)
                + model[lower].translation.distance(model[end].translation);
            let hips = effector_bones[Effector::Pelvis as usize];
            let trunk = if skeleton.is_ancestor_or_self(hips, upper) {
                skeleton
                    .ancestors_inclusive(upper)
                    .take_while(|&b| b != hips)
                    .filter_map(|b| skeleton.parent(b).map(|p| (b, p)))
                    .map(|(b, p)| model[b].translation.distance(model[p].translation))
                    .sum()
            } else {
                f32::INFINITY
            };
            let limits = [upper, lower, twist.unwrap_or(end), end].map(|b| limit_of(&joints, b));
            limbs.push(Limb {
                effector: k,
                chain: LimbChain {
                    upper,
                    lower,
                    twist,
                    end,
                    path,
                    limits,
                },
                reach,
                trunk,
                on_hips: skeleton.parent(upper) == Some(effector_bones[Effector::Pelvis as usize]),
                subtree: Vec::new(),
            });
        }
        for j in &mut joints {
            for l in limbs.iter().filter(|l| l.chain.path.contains(&j.bone)) {
                j.limb |= 1 << l.effector;
            }
        }
        if role_direction(skeleton, &model, map, B::Head).is_none() {
            return Err(HumanoidError::ZeroLengthBone(B::Head));
        }
        let mut look_chain = [None; 2];
        let mut slot = 0;
        for b in skeleton.ancestors_inclusive(head).skip(1) {
            if slot == 2 || Some(b) == map.get(B::Hips) {
                break;
            }
            // Only bones that carry no hand: turning the chest here would undo the arms.
            if joints.iter().any(|j| j.bone == b && j.affects & 0b11 == 0) {
                look_chain[slot] = Some(b);
                slot += 1;
            }
        }
        let n = skeleton.len();
        let body_height = {
            let p = |b: usize| model[b].translation;
            let feet = 0.5 * (p(effector_bones[2]) + p(effector_bones[3]));
            let hips = p(effector_bones[4]);
            hips.distance(p(head)) + hips.distance(feet)
        };
        let mut wanted = vec![false; n];
        let seeds = joints
            .iter()
            .map(|j| j.bone)
            .chain(effector_bones)
            .chain([head])
            .chain(segments.iter().map(|s| s.bone))
            .chain(limbs.iter().flat_map(|l| l.chain.path.clone()));
        for b in seeds {
            for a in skeleton.ancestors_inclusive(b) {
                if wanted[a] {
                    break;
                }
                wanted[a] = true;
            }
        }
        let fk_bones: Vec<usize> = (0..n).filter(|&b| wanted[b]).collect();
        let in_fk = wanted;
        let below = |top: usize, skip: &[usize]| -> Vec<usize> {
            fk_bones
                .iter()
                .copied()
                .filter(|&b| skeleton.is_ancestor_or_self(top, b) && !skip.contains(&b))
                .collect()
        };
        for limb in &mut limbs {
            limb.subtree = below(limb.chain.upper, &limb.chain.path);
        }
        let pelvis_fk = fk_bones
            .iter()
            .copied()
            .filter(|&b| skeleton.is_ancestor_or_self(b, effector_bones[Effector::Pelvis as usize]))
            .collect();
        let look_top = look_chain[1].or(look_chain[0]).unwrap_or(head);
        let look_subtree = below(look_top, &[]);
        let fk_links = fk_bones
            .iter()
            .map(|&b| FkLink {
                bone: b,
                parent: skeleton.parent(b),
                scale: skeleton.bones()[b].rest.scale,
            })
            .collect();
        let joint_bones = joints.iter().map(|j| j.bone).collect();
        let mut solver = Self {
            settings: FullBodySettings::default(),
            fk_links,
            joint_bones,
            in_fk,
            look_subtree,
            pelvis_fk,
            masses,
            up: frame.up,
            segments,
            limits,
            joints,
            limbs,
            effector_bones,
            head,
            look_chain,
            head_aim,
            body_height,
            bone_count: n,
            cols,
            rest: skeleton.rest_pose(),
            id: NEXT_SOLVER_ID.fetch_add(1, Ordering::Relaxed),
            scratch: FullBodyScratch::default(),
        };
        solver.scratch = solver.scratch();
        Ok(solver)
    }

    /// A scratch sized for this solver (one per character solved with
    /// [`FullBodySolver::solve_with`]).
    #[must_use]
    pub fn scratch(&self) -> FullBodyScratch {
        let mut s = FullBodyScratch::default();
        self.fit(&mut s);
        s
    }

    /// Sizes `s` for this solver (allocates only when it was made for another one). The
    /// per-solve buffers are not the scratch's: a solve borrows its thread's (see `work`).
    pub(super) fn fit(&self, s: &mut FullBodyScratch) {
        let (n, cols) = (self.bone_count, self.cols);
        if s.cols == cols && s.bones == n {
            return;
        }
        s.cols = cols;
        s.bones = n;
        s.saturated = vec![false; self.joints.len()];
        s.anchor_affects = vec![0; self.joints.len()];
        s.last = self.rest.clone();
        s.last_of = 0;
        s.clamped_of = 0;
        s.segment_pos = vec![Vec3::ZERO; self.segments.len()];
        s.clipped = vec![false; self.joints.len()];
        s.frozen = vec![false; self.joints.len()];
        s.limit_normal = vec![Vec3::ZERO; self.joints.len()];
        s.reset();
    }

    /// Runs `f` with the solver and its own scratch (moved out for the call: no allocation).
    pub(super) fn with_own_scratch<R>(
        &mut self,
        f: impl FnOnce(&Self, &mut FullBodyScratch) -> R,
    ) -> R {
        let mut s = core::mem::take(&mut self.scratch);
        let r = f(self, &mut s);
        self.scratch = s;
        r
    }

    /// The settings.
    #[must_use]
    pub fn settings(&self) -> &FullBodySettings {
        &self.settings
    }

    /// The settings, mutably.
    pub fn settings_mut(&mut self) -> &mut FullBodySettings {
        &mut self.settings
    }

    /// The joint limits in use.
    #[must_use]
    pub fn limits(&self) -> &HumanoidLimits {
        &self.limits
    }

    /// The segment masses (used by the centre-of-mass goal and [`FullBodySolver::center_of_mass`]).
    #[must_use]
    pub fn masses(&self) -> &HumanoidMasses {
        &self.masses
    }

    /// Overrides the segment masses.
    pub fn set_masses(&mut self, masses: HumanoidMasses) {
        self.masses = masses;
        // Another body: a scratch's record of this solver's last output (its fixed point)
        // no longer applies.
        self.id = NEXT_SOLVER_ID.fetch_add(1, Ordering::Relaxed);
    }

    /// Number of degrees of freedom (columns of the Jacobian).
    #[must_use]
    pub fn dof_count(&self) -> usize {
        self.cols
    }

    /// The head's face direction in its own local frame (the rest body forward), the axis the
    /// look-at goal aims.
    #[must_use]
    pub fn head_aim_axis(&self) -> Vec3 {
        self.head_aim
    }

    /// The head bone index.
    #[must_use]
    pub fn head_bone(&self) -> usize {
        self.head
    }

    /// The bone of each effector, indexed like [`Effector::ALL`].
    #[must_use]
    pub fn effector_bones(&self) -> [usize; 5] {
        self.effector_bones
    }

    /// Goals that hold `pose` where it is: every effector 6D at its current transform and the
    /// look-at one model unit ahead of the face; the balance goal stays disabled. A starting
    /// point for spawning targets at the current hand/foot/head/pelvis positions.
    ///
    /// # Panics
    /// If `pose` does not match `skeleton` (see [`Pose::validate`]).
    #[must_use]
    pub fn goals_at_pose(&mut self, skeleton: &Skeleton, pose: &Pose) -> FullBodyGoals {
        skeleton.model_transforms_into(pose, &mut self.scratch.model);
        let mut goals = FullBodyGoals::default();
        for (g, &b) in goals.effectors.iter_mut().zip(&self.effector_bones) {
            *g = EffectorGoal::new(
                self.scratch.model[b].translation,
                self.scratch.model[b].rotation,
            );
        }
        let head = self.scratch.model[self.head];
        goals.look_at = LookAtGoal {
            target: head.translation + head.rotation * self.head_aim,
            enabled: true,
            ..LookAtGoal::default()
        };
        goals
    }

    /// Whether every joint of `pose` satisfies its limit within `tolerance` radians.
    #[must_use]
    pub fn pose_within_limits(&self, skeleton: &Skeleton, pose: &Pose, tolerance: f32) -> bool {
        self.joints.iter().all(|j| {
            let rest = &skeleton.bones()[j.bone].rest;
            j.limit.contains(
                rest.rotation,
                rest.translation,
                pose.rotations[j.bone],
                pose.translations[j.bone],
                tolerance,
            )
        })
    }

    /// Moves every joint of `pose` onto its limit where it is outside (the clamp a tracking
    /// solve starts with: a joint within its limit, or already clamped, is left bit for bit).
    /// The VR body's candidate goes through it before its goals are read from it; the solve
    /// that follows (with the solver's own scratch) does not clamp the joints again that
    /// are bit-identical to what this returned.
    pub(crate) fn clamp_to_limits(&mut self, skeleton: &Skeleton, pose: &mut Pose) {
        for j in &self.joints {
            j.clamp(skeleton, pose);
        }
        self.scratch.clamped.copy_from(pose);
        self.scratch.clamped_of = self.id;
    }

    /// Solves `pose` in place toward `goals`, starting from the pose given: one frame of
    /// tracking (the previous frame's solution, or the animated pose, as the start).
    ///
    /// Built for goals that move every frame and are not always feasible: the cost is bounded
    /// ([`FullBodySettings::max_iterations`], and a pass stops early when it stalls), there
    /// are no restarts (so no jump to another, equally good pose: the limbs' swivel is only
    /// searched near where it is), a goal that the previous solve could not meet while others
    /// were met is weakened ([`FullBodySettings::give_way_distance`]) so it cannot pull the met
    /// goals away, and the result always follows the goals (it is never the previous frame's
    /// pose handed back because it scored better). A goal the budget did not reach keeps
    /// converging over the next frames. For an unrelated pose (a first frame, a teleport), use
    /// [`FullBodySolver::solve_cold`].
    ///
    /// Unreachable goals are not errors: the pose gets as close as limits allow and the report
    /// says so. The returned pose never violates a joint limit; its residuals are measured on
    /// it. A pose that already meets every goal is returned bit for bit. So is a fixed point:
    /// when the last solve returned its input unchanged and gets that pose back with the same
    /// goals and settings, it returns it (and the same report) at the cost of comparing them.
    ///
    /// # Errors
    /// [`HumanoidError::Skeleton`] when `pose` or `skeleton` does not match the skeleton the
    /// solver was built for or `pose` is not finite, and [`HumanoidError::NonFiniteGoal`] for a
    /// NaN/infinite goal; `pose` is untouched then.
    pub fn solve(
        &mut self,
        skeleton: &Skeleton,
        pose: &mut Pose,
        goals: &FullBodyGoals,
    ) -> Result<FullBodyReport, HumanoidError> {
        self.with_own_scratch(|rig, s| rig.solve_with(skeleton, pose, goals, s))
    }

    /// Solves `pose` toward goals unrelated to it (from the rest pose, after a teleport): up to
    /// [`FullBodySettings::cold_iterations`] per attempt and, while an attempt does not
    /// converge, [`FullBodySettings::max_restarts`] restarts — from the rest pose, then from
    /// deterministic perturbations — keeping the best result by [`FullBodyReport::cost`], never
    /// one worse than the incoming pose. Every goal counts at full weight. Costs more and may
    /// land on another pose than the one a frame-to-frame [`FullBodySolver::solve`] would
    /// follow; use it once, then track.
    ///
    /// # Errors
    /// As [`FullBodySolver::solve`].
    pub fn solve_cold(
        &mut self,
        skeleton: &Skeleton,
        pose: &mut Pose,
        goals: &FullBodyGoals,
    ) -> Result<FullBodyReport, HumanoidError> {
        self.with_own_scratch(|rig, s| rig.solve_cold_with(skeleton, pose, goals, s))
    }

    /// [`FullBodySolver::solve`] (`cold`: [`FullBodySolver::solve_cold`]) as a stack's
    /// stage: the stack's warm-start store is the record of the last output (`last`, over
    /// every bone; `None` when the stack vouches for none), so the scratch keeps no copy of
    /// its own (see `Last`).
    pub(crate) fn solve_in_stack(
        &mut self,
        skeleton: &Skeleton,
        pose: &mut Pose,
        goals: &FullBodyGoals,
        cold: bool,
        last: Option<&[(Quat, Vec3)]>,
    ) -> Result<FullBodyReport, HumanoidError> {
        self.with_own_scratch(|rig, scratch| {
            rig.fit(scratch);
            Work::lend(rig, scratch, |s| {
                Solve::new(rig, s, Last::Given(last)).solve_mode(skeleton, pose, goals, cold)
            })
        })
    }

    /// [`FullBodySolver::solve`] with a caller-owned scratch (one per character; see
    /// [`FullBodySolver::scratch`]): the solver itself is not modified, so one solver serves
    /// every character of its rig.
    ///
    /// # Errors
    /// As [`FullBodySolver::solve`].
    pub fn solve_with(
        &self,
        skeleton: &Skeleton,
        pose: &mut Pose,
        goals: &FullBodyGoals,
        scratch: &mut FullBodyScratch,
    ) -> Result<FullBodyReport, HumanoidError> {
        self.fit(scratch);
        Work::lend(self, scratch, |s| {
            Solve::new(self, s, Last::Own).solve_mode(skeleton, pose, goals, false)
        })
    }

    /// [`FullBodySolver::solve_cold`] with a caller-owned scratch.
    ///
    /// # Errors
    /// As [`FullBodySolver::solve`].
    pub fn solve_cold_with(
        &self,
        skeleton: &Skeleton,
        pose: &mut Pose,
        goals: &FullBodyGoals,
        scratch: &mut FullBodyScratch,
    ) -> Result<FullBodyReport, HumanoidError> {
        self.fit(scratch);
        Work::lend(self, scratch, |s| {
            Solve::new(self, s, Last::Own).solve_mode(skeleton, pose, goals, true)
        })
    }

    /// The centre of mass of `pose` (model space) from the segment masses; `None` when the
    /// masses are all zero.
    ///
    /// # Panics
    /// If `pose` does not match `skeleton` (see [`Pose::validate`]).
    #[must_use]
    pub fn center_of_mass(&mut self, skeleton: &Skeleton, pose: &Pose) -> Option<Vec3> {
        Work::with(self, |work| {
            let model = work.model();
            skeleton.model_transforms_into(pose, model);
            let (mut total, mut sum) = (0.0f32, Vec3::ZERO);
            for seg in &self.segments {
                let m = self.masses.get(seg.role);
                total += m;
                sum += model[seg.bone].transform_point(seg.local_point) * m;
            }
            (total > 0.0).then(|| sum / total)
        })
    }
}
