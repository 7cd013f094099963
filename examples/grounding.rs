//! Foot grounding: a character glides back and forth over a ramp, a stair and flat ground
//! while its feet stand on whatever is under them and its pelvis moves so the lower foot
//! reaches. Every mesh the feet may stand on is marked `IkGround`; the plugin casts down
//! through each foot with Bevy's mesh ray casting (feature `mesh-ground`).
//!
//! `cargo run --example grounding --features demo` (G: grounding on/off)

use bevy::prelude::*;
use bevy_ik::prelude::*;

fn main() {
    App::new()
        .add_plugins((DefaultPlugins, IkPlugin::default()))
        .add_systems(Startup, setup)
        .add_systems(Update, (glide, toggle, draw_grounding))
        .run();
}

#[derive(Component)]
struct Glider;

fn setup(
    mut commands: Commands,
    assets: Res<AssetServer>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    commands.spawn((
        Camera3d::default(),
        Transform::from_xyz(0.5, 1.4, 4.0).looking_at(Vec3::new(0.5, 0.6, 0.0), Vec3::Y),
    ));
    commands.spawn((
        DirectionalLight {
            shadow_maps_enabled: true,
            ..default()
        },
        Transform::from_xyz(2.0, 4.0, 3.0).looking_at(Vec3::ZERO, Vec3::Y),
    ));
    let stone = materials.add(Color::srgb(0.55, 0.56, 0.6));
    let mut ground = |mesh: Mesh, at: Transform| {
        commands.spawn((
            Mesh3d(meshes.add(mesh)),
            MeshMaterial3d(stone.clone()),
            at,
            IkGround,
        ));
    };
    ground(
        Plane3d::default().mesh().size(10.0, 3.0).into(),
        Transform::IDENTITY,
    );
    // A stair of three 12 cm steps.
    for k in 1..=3 {
        let h = 0.12 * k as f32;
        ground(
            Cuboid::new(0.35, h, 1.5).into(),
            Transform::from_xyz(0.8 + 0.35 * k as f32, h / 2.0, 0.0),
        );
    }
    // A 15° ramp.
    ground(
        Cuboid::new(1.6, 0.1, 1.5).into(),
        Transform::from_xyz(-1.5, 0.15, 0.0).with_rotation(Quat::from_rotation_z(-0.26)),
    );
    // The character: its root stays at height 0 (no character controller here), so the
    // pelvis may rise onto the stair (`raise_pelvis`). It glides without a walk clip, so its
    // feet are not locked in the world.
    commands.spawn((
        WorldAssetRoot(assets.load(GltfAssetLabel::Scene(0).from_asset("character.glb"))),
        Glider,
        IkGrounding {
            raise_pelvis: true,
            lock_feet: false,
            ..IkGrounding::humanoid()
        },
    ));
}

/// Back and forth along X.
fn glide(time: Res<Time>, mut q: Query<&mut Transform, With<Glider>>) {
    for mut t in &mut q {
        t.translation.x = 2.2 * (time.elapsed_secs() * 0.35).sin();
    }
}

/// G switches grounding off and on (`IkDisabled` on the character).
fn toggle(
    keys: Res<ButtonInput<KeyCode>>,
    mut commands: Commands,
    q: Query<(Entity, Has<IkDisabled>), With<IkGrounding>>,
) {
    if keys.just_pressed(KeyCode::KeyG) {
        for (e, off) in &q {
            if off {
                commands.entity(e).remove::<IkDisabled>();
            } else {
                commands.entity(e).insert(IkDisabled);
            }
        }
    }
}

/// The ankle goals (green when planted on the ground), the ground normals and the pelvis
/// offset.
fn draw_grounding(mut gizmos: Gizmos, q: Query<&IkGroundingState>) {
    for state in &q {
        for f in state.feet.iter().filter(|f| f.grounded) {
            let color = Color::srgb(1.0 - f.weight, 0.8 * f.weight + 0.2, 0.2);
            gizmos.sphere(Isometry3d::from_translation(f.goal), 0.03, color);
            gizmos.arrow(f.goal, f.goal + f.normal * 0.2, color);
        }
        if let Some(f) = state.feet.first() {
            let top = f.goal + state.up * 1.0;
            gizmos.arrow(top, top + state.pelvis_offset, Color::srgb(0.2, 0.5, 1.0));
        }
    }
}
