//! The panel's state, [`DemoSettings`]: which solver drives the character and how it is tuned,
//! what is drawn; saved to and loaded from a RON file ("Save"/"Load", `--settings`).

use std::path::Path;

use bevy::prelude::*;
use bevy_ik::ik_core::humanoid::FullBodySettings;
use bevy_ik::prelude::*;
use serde::{Deserialize, Serialize};

use crate::solver::SolverUi;

/// Where "Save" and "Load" keep the panel's settings.
pub const SETTINGS_FILE: &str = "bevy_ik_demo.ron";

/// Holds the settings and passes the drawing ones on to the plugin's [`IkDebugDraw`].
pub struct SettingsPlugin {
    /// The settings to start with.
    pub initial: DemoSettings,
}

impl Plugin for SettingsPlugin {
    fn build(&self, app: &mut App) {
        app.insert_resource(self.initial.clone())
            .add_systems(Update, apply_debug_draw);
    }
}

/// Asks the plugin's debug drawing for what the panel's "`bevy_ik`" row ticks.
fn apply_debug_draw(settings: Res<DemoSettings>, mut debug_draw: ResMut<IkDebugDraw>) {
    if !settings.is_changed() {
        return;
    }
    let draw = settings.draw;
    let wanted = IkDebugDraw {
        enabled: draw.ik_chains || draw.ik_limits || draw.ik_residuals || draw.ik_balance,
        chains: draw.ik_chains,
        targets: false,
        poles: false,
        limits: draw.ik_limits,
        residuals: draw.ik_residuals,
        center_of_mass: draw.ik_balance,
        ..IkDebugDraw::default()
    };
    if *debug_draw != wanted {
        *debug_draw = wanted;
    }
}

/// Settings of the hybrid full-body solver, applied live to the character's [`IkHumanoid`]
/// (`head` sets it up again, in place).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FullBodyUi {
    /// IK/FK blend (applied live).
    pub weight: f32,
    /// Jacobian iterations per attempt.
    pub max_iterations: u32,
    /// Extra attempts from perturbed starts when one does not converge.
    pub max_restarts: u32,
    /// Position tolerance, millimetres.
    pub position_tolerance_mm: f32,
    /// Rotation tolerance, degrees.
    pub rotation_tolerance_deg: f32,
    /// Damping of the least-squares step.
    pub damping: f32,
    /// Finish the limbs analytically.
    pub analytic_limbs: bool,
    /// Null-space pull toward the animated pose.
    pub posture_gain: f32,
    /// Head look-at goal.
    pub head: bool,
    /// Keep the centre of mass over the feet ([`IkBalance`], applied live).
    pub center_of_mass: bool,
    /// Support point between the feet: 0 left foot, 0.5 midway, 1 right foot (applied live).
    pub support_bias: f32,
}

impl Default for FullBodyUi {
    fn default() -> Self {
        let core = FullBodySettings::default();
        Self {
            weight: 1.0,
            max_iterations: core.max_iterations,
            max_restarts: core.max_restarts,
            position_tolerance_mm: core.position_tolerance * 1000.0,
            rotation_tolerance_deg: core.rotation_tolerance.to_degrees(),
            damping: core.damping,
            analytic_limbs: core.analytic_limbs,
            posture_gain: core.posture_gain,
            head: true,
            center_of_mass: false,
            support_bias: IkBalance::default().support_bias,
        }
    }
}

impl FullBodyUi {
    /// The core solver settings.
    pub fn core(&self) -> FullBodySettings {
        FullBodySettings {
            max_iterations: self.max_iterations.max(1),
            max_restarts: self.max_restarts,
            position_tolerance: self.position_tolerance_mm.max(0.001) / 1000.0,
            rotation_tolerance: self.rotation_tolerance_deg.max(0.001).to_radians(),
            damping: self.damping.max(0.0),
            analytic_limbs: self.analytic_limbs,
            posture_gain: self.posture_gain.max(0.0),
            ..FullBodySettings::default()
        }
    }

    /// The balance goal these settings describe.
    pub fn balance(&self) -> IkBalance {
        IkBalance {
            enabled: self.center_of_mass,
            support_bias: self.support_bias,
            ..IkBalance::default()
        }
    }
}

/// The tunable settings of one analytic limb.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LimbUi {
    /// Solve this limb (else it keeps the animated pose: [`IkDisabled`]).
    pub enabled: bool,
    /// IK/FK blend.
    pub weight: f32,
    /// How much the hand/foot takes the target's rotation.
    pub rotation_weight: f32,
    /// Bend toward the pole handle.
    pub use_pole: bool,
    /// How far the bend plane turns toward the pole.
    pub pole_weight: f32,
    /// Soft reach band (fraction of full reach).
    pub soft_reach: f32,
    /// Anatomical flex limits on the elbow/knee (3°–150°) instead of 0–180°.
    pub flex_limits: bool,
}

impl Default for LimbUi {
    fn default() -> Self {
        Self {
            enabled: true,
            weight: 1.0,
            rotation_weight: 1.0,
            use_pole: true,
            pole_weight: 1.0,
            soft_reach: 0.0,
            flex_limits: true,
        }
    }
}

/// One goal of the full-body rig.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GoalUi {
    /// The goal follows its target (else it is off).
    pub enabled: bool,
    /// Weight within its priority level.
    pub weight: f32,
    /// Priority level, 0 = highest.
    pub priority: u8,
    /// IK/FK blend of this goal.
    pub blend: f32,
    /// Also match the target's rotation (hands, feet, pelvis).
    pub rotation: bool,
}

impl Default for GoalUi {
    fn default() -> Self {
        Self {
            enabled: true,
            weight: 1.0,
            priority: 0,
            blend: 1.0,
            rotation: false,
        }
    }
}

/// The full-body rig's settings.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RigUi {
    /// IK/FK blend of the whole rig.
    pub weight: f32,
    /// Most iterations per frame.
    pub max_iterations: u32,
    /// Position tolerance, millimetres.
    pub position_tolerance_mm: f32,
    /// Angle tolerance, degrees.
    pub angle_tolerance_deg: f32,
    /// Pull toward the animated (reference) pose in the goals' null space.
    pub posture_gain: f32,
    /// Anatomical joint limits (else free ball joints).
    pub joint_limits: bool,
    /// The hips may translate (a movable root).
    pub pelvis_translates: bool,
    /// The head aims its face at its target (else it takes the target's rotation).
    pub head_look_at: bool,
    /// Per goal, in `Role::ALL` order (hands, feet, pelvis, head).
    pub goals: [GoalUi; 6],
}

impl Default for RigUi {
    fn default() -> Self {
        let core = IkRigSettings::default();
        let goal = |priority, rotation| GoalUi {
            priority,
            rotation,
            ..GoalUi::default()
        };
        Self {
            weight: 1.0,
            max_iterations: core.max_iterations,
            position_tolerance_mm: core.position_tolerance * 1000.0,
            angle_tolerance_deg: core.angle_tolerance.to_degrees(),
            posture_gain: core.posture_gain,
            joint_limits: true,
            pelvis_translates: true,
            head_look_at: true,
            // Feet first (planted flat), then the pelvis (upright), then the hands, then the
            // head: the humanoid order of the full-body solver. On one level a hand dragged out
            // of reach traded the feet and pelvis for itself by weight (the Quaternius worker
            // leaned over, feet 105–160 mm and the pelvis 485 mm off).
            goals: [
                goal(2, false),
                goal(2, false),
                goal(0, true),
                goal(0, true),
                goal(1, true),
                goal(3, false),
            ],
        }
    }
}

/// What the demo draws (handles, goal lines, skeleton, grid) and what it asks the plugin's
/// debug drawing ([`IkDebugDraw`]) for.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DrawUi {
    pub handles: bool,
    pub goal_lines: bool,
    pub skeleton: bool,
    pub grid: bool,
    /// Plugin: chains of limbs and rigs.
    pub ik_chains: bool,
    /// Plugin: joint-limit cones and hinge axes.
    pub ik_limits: bool,
    /// Plugin: effector-to-target lines, red when missed.
    pub ik_residuals: bool,
    /// Plugin: centre of mass and support point (while the balance goal is on).
    pub ik_balance: bool,
}

impl Default for DrawUi {
    fn default() -> Self {
        Self {
            handles: true,
            goal_lines: true,
            skeleton: false,
            grid: true,
            ik_chains: false,
            ik_limits: false,
            ik_residuals: false,
            ik_balance: true,
        }
    }
}

/// Everything the panel controls. Missing fields in a settings file take their defaults.
#[derive(Resource, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DemoSettings {
    /// Which solver drives the character.
    pub solver: SolverUi,
    /// The full-body solver's settings.
    pub full_body: FullBodyUi,
    /// Play the idle clip under the IK.
    pub animation: bool,
    /// Move the targets along the built-in script.
    pub scripted_motion: bool,
    /// The Jacobian rig's settings.
    pub rig: RigUi,
    /// Per analytic limb: left arm, right arm, left leg, right leg.
    pub limbs: [LimbUi; 4],
    /// What is drawn.
    pub draw: DrawUi,
    /// Two analytic arm stages after the solver (see the `stack` module).
    pub arms_on_top: bool,
}

impl Default for DemoSettings {
    fn default() -> Self {
        Self {
            solver: SolverUi::FullBody,
            full_body: FullBodyUi::default(),
            animation: true,
            scripted_motion: false,
            rig: RigUi::default(),
            limbs: [LimbUi::default(); 4],
            draw: DrawUi::default(),
            arms_on_top: false,
        }
    }
}

/// Reads settings from a RON file (fields it lacks take their defaults).
///
/// # Errors
/// When the file cannot be read or is not valid RON for [`DemoSettings`].
pub fn load_settings(path: &Path) -> Result<DemoSettings, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    ron::from_str(&text).map_err(|e| format!("bad {}: {e}", path.display()))
}

/// Writes settings to a RON file.
///
/// # Errors
/// When the settings cannot be serialised or the file cannot be written.
pub fn save_settings(settings: &DemoSettings, path: &Path) -> Result<(), String> {
    let text = ron::ser::to_string_pretty(settings, ron::ser::PrettyConfig::default())
        .map_err(|e| format!("cannot serialise the settings: {e}"))?;
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handles::Role;

    #[test]
    fn settings_round_trip_through_ron() {
        let mut settings = DemoSettings {
            solver: SolverUi::Limbs,
            animation: false,
            ..DemoSettings::default()
        };
        settings.rig.goals[Role::Head.index()].priority = 2;
        settings.rig.posture_gain = 0.35;
        settings.limbs[1].pole_weight = 0.25;
        settings.full_body.center_of_mass = true;
        settings.full_body.support_bias = 0.3;
        let text = ron::ser::to_string_pretty(&settings, ron::ser::PrettyConfig::default())
            .expect("settings serialise");
        let back: DemoSettings = ron::from_str(&text).expect("settings parse back");
        assert_eq!(back, settings);
    }

    #[test]
    fn partial_settings_files_take_defaults_for_the_rest() {
        let loaded: DemoSettings =
            ron::from_str("(solver: Limbs, rig: (posture_gain: 0.5))").expect("partial file");
        assert_eq!(loaded.solver, SolverUi::Limbs);
        assert_eq!(loaded.rig.posture_gain, 0.5);
        assert_eq!(loaded.rig.goals, RigUi::default().goals);
        assert_eq!(loaded.limbs, DemoSettings::default().limbs);
        assert!(ron::from_str::<DemoSettings>("(solver: Fabrik)").is_err());
        // Files saved before the centre-of-mass toggle existed load with it off.
        assert!(!loaded.full_body.center_of_mass);
        let balanced: DemoSettings =
            ron::from_str("(full_body: (center_of_mass: true, damping: 0.05))").expect("balance");
        assert!(balanced.full_body.center_of_mass);
        assert_eq!(balanced.full_body.balance(), IkBalance::on());
        assert_eq!(balanced.full_body.damping, 0.05);
    }

    #[test]
    fn settings_files_round_trip_and_bad_files_are_reported() {
        let dir = std::env::temp_dir().join(format!("bevy_ik_demo_{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("settings.ron");
        let mut settings = DemoSettings::default();
        settings.rig.weight = 0.25;
        save_settings(&settings, &path).expect("written");
        assert_eq!(load_settings(&path), Ok(settings));
        std::fs::write(&path, "(solver: Fabrik)").expect("written");
        assert!(load_settings(&path).is_err_and(|e| e.contains("bad")));
        assert!(load_settings(&dir.join("missing.ron")).is_err_and(|e| e.contains("cannot read")));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
