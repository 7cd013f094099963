//! Terrain mode: a floor, a stair under the left foot's side and a ramp under the right's
//! (all marked [`IkGround`]) slide slowly under the character while an [`IkGrounding`] stage,
//! after the solver's stages, keeps its feet on them — the lower foot reached by lowering the
//! pelvis, each foot turned to its ground. A small "Terrain" window switches the terrain,
//! grounding, the sliding and the drawing (ankle goals, ground normals, pelvis offset); the
//! demo's own floor and step are hidden while the terrain is shown.
//!
//! `--terrain` starts with it on.

use bevy::prelude::*;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};
use bevy_ik::prelude::*;

use crate::character::{BodyFrame, Character, PropsShown};

/// The terrain mode.
pub struct GroundingDemoPlugin {
    /// Start with the terrain on.
    pub initial: bool,
}

impl Plugin for GroundingDemoPlugin {
    fn build(&self, app: &mut App) {
        app.insert_resource(TerrainDemo {
            terrain: self.initial,
            ..TerrainDemo::default()
        })
        .add_systems(EguiPrimaryContextPass, terrain_window)
        .add_systems(
            Update,
            (spawn_terrain, sync_grounding, slide_terrain, draw_grounding).chain(),
        );
    }
}

/// What the terrain window switches.
#[derive(Resource, Clone, Copy, Debug, PartialEq)]
pub struct TerrainDemo {
    /// Terrain shown (and the demo's floor and step hidden).
    pub terrain: bool,
    /// The grounding stage runs.
    pub grounding: bool,
    /// The terrain slides back and forth under the character.
    pub slide: bool,
    /// Ankle goals, normals and the pelvis offset drawn.
    pub draw: bool,
}

impl Default for TerrainDemo {
    fn default() -> Self {
        Self {
            terrain: false,
            grounding: true,
            slide: true,
            draw: true,
        }
    }
}

/// The terrain's root (its pieces are children).
#[derive(Component)]
struct Terrain;

/// The grounding stage entity the mode spawned.
#[derive(Component)]
struct DemoGrounding;

fn terrain_window(mut contexts: EguiContexts, mut demo: ResMut<TerrainDemo>) -> Result {
    let ctx = contexts.ctx_mut()?;
    let mut edited = *demo;
    egui::Window::new("Terrain")
        .default_pos([1040.0, 10.0])
        .resizable(false)
        .show(ctx, |ui| {
            ui.checkbox(&mut edited.terrain, "Slopes and stair");
            ui.add_enabled_ui(edited.terrain, |ui| {
                ui.checkbox(&mut edited.grounding, "Foot grounding");
                ui.checkbox(&mut edited.slide, "Slide the ground");
                ui.checkbox(&mut edited.draw, "Draw offsets");
            });
        });
    if edited != *demo {
        *demo = edited;
    }
    Ok(())
}

/// Spawns (or removes) the terrain, sized to the character.
fn spawn_terrain(
    mut commands: Commands,
    demo: Res<TerrainDemo>,
    frame: Option<Res<BodyFrame>>,
    terrain: Query<Entity, With<Terrain>>,
    mut shown: ResMut<PropsShown>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    let Some(frame) = frame else { return };
    if !(demo.is_changed() || frame.is_changed()) {
        return;
    }
    for e in &terrain {
        commands.entity(e).despawn();
    }
    if shown.0 == demo.terrain {
        shown.0 = !demo.terrain;
    }
    if !demo.terrain {
        return;
    }
    let s = frame.scale;
    let turn = Quat::from_rotation_arc(Vec3::Z, frame.forward);
    let stone = materials.add(StandardMaterial {
        base_color: Color::srgb(0.45, 0.46, 0.5),
        perceptual_roughness: 0.9,
        ..default()
    });
    let wood = materials.add(StandardMaterial {
        base_color: Color::srgb(0.55, 0.42, 0.3),
        perceptual_roughness: 0.8,
        ..default()
    });
    let root = commands
        .spawn((
            Name::new("terrain"),
            Terrain,
            Transform::from_translation(frame.origin).with_rotation(turn),
            Visibility::default(),
        ))
        .id();
    let mut piece = |mesh: Mesh, material: &Handle<StandardMaterial>, at: Transform| {
        commands.spawn((
            Mesh3d(meshes.add(mesh)),
            MeshMaterial3d(material.clone()),
            at,
            IkGround,
            ChildOf(root),
        ));
    };
    // Body units in the terrain's frame: +X left, +Y up, +Z forward (the root is turned to the
    // character's forward).
    piece(
        Plane3d::default().mesh().size(8.0 * s, 8.0 * s).into(),
        &stone,
        Transform::IDENTITY,
    );
    // A stair of three 8 cm steps on the left, running along the slide (left-right).
    for k in 1..=3 {
        let h = 0.08 * k as f32 * s;
        piece(
            Cuboid::new(0.12 * s, h, 0.6 * s).into(),
            &wood,
            Transform::from_xyz((0.04 + 0.12 * k as f32) * s, h / 2.0, 0.0),
        );
    }
    // A 14° ramp on the right, rising away from the character.
    piece(
        Cuboid::new(0.5 * s, 0.04 * s, 0.6 * s).into(),
        &stone,
        Transform::from_xyz(-0.35 * s, 0.05 * s, 0.0)
            .with_rotation(Quat::from_rotation_z(14f32.to_radians())),
    );
}

/// Adds the grounding stage to the character (after its other stages) while the terrain is
/// on; `IkDisabled` on it when grounding is switched off.
fn sync_grounding(
    mut commands: Commands,
    demo: Res<TerrainDemo>,
    characters: Query<Entity, With<Character>>,
    stages: Query<(Entity, &IkStageOf, Has<IkDisabled>), With<DemoGrounding>>,
) {
    let Some(character) = characters.iter().next() else {
        return;
    };
    let mut found = false;
    for (e, of, disabled) in &stages {
        if of.0 != character || !demo.terrain {
            commands.entity(e).despawn();
            continue;
        }
        found = true;
        if disabled == demo.grounding {
            if demo.grounding {
                commands.entity(e).remove::<IkDisabled>();
            } else {
                commands.entity(e).insert(IkDisabled);
            }
        }
    }
    if demo.terrain && !found {
        commands.spawn((
            Name::new("foot grounding"),
            DemoGrounding,
            // The ground slides under the feet, so they are not locked in the world.
            IkGrounding {
                lock_feet: false,
                ..IkGrounding::humanoid()
            },
            IkStageOf(character),
        ));
    }
}

/// Slides the terrain left and right under the character (a 10 s cycle).
fn slide_terrain(
    time: Res<Time>,
    demo: Res<TerrainDemo>,
    frame: Option<Res<BodyFrame>>,
    mut terrain: Query<&mut Transform, With<Terrain>>,
) {
    let (Some(frame), true) = (frame, demo.slide) else {
        return;
    };
    let x = (time.elapsed_secs() * core::f32::consts::TAU / 10.0).sin() * 0.35;
    for mut t in &mut terrain {
        t.translation = frame.origin + frame.left * x * frame.scale;
    }
}

/// Ankle goals (green on the ground, red lifted), ground normals and the pelvis offset.
fn draw_grounding(
    demo: Res<TerrainDemo>,
    mut gizmos: Gizmos,
    states: Query<(&IkGroundingState, Has<IkDisabled>), With<DemoGrounding>>,
    frame: Option<Res<BodyFrame>>,
) {
    if !(demo.terrain && demo.draw) {
        return;
    }
    let s = frame.map_or(1.0, |f| f.scale);
    for (state, disabled) in &states {
        if disabled {
            continue;
        }
        for f in state.feet.iter().filter(|f| f.grounded) {
            let color = Color::srgb(1.0 - f.weight, 0.3 + 0.7 * f.weight, 0.25);
            gizmos.sphere(Isometry3d::from_translation(f.goal), 0.025 * s, color);
            gizmos.arrow(f.goal, f.goal + f.normal * 0.15 * s, color);
        }
        let feet = state.feet.iter().map(|f| f.goal);
        let n = state.feet.len().max(1) as f32;
        let top = feet.sum::<Vec3>() / n + state.up * 0.95 * s;
        gizmos.arrow(top, top + state.pelvis_offset, Color::srgb(0.25, 0.55, 1.0));
        gizmos.line(
            top - state.up.any_orthonormal_vector() * 0.05 * s,
            top + state.up.any_orthonormal_vector() * 0.05 * s,
            Color::srgb(0.25, 0.55, 1.0),
        );
    }
}
