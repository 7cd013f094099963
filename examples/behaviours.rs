//! The behaviour stages on a glTF character, in one file to copy: the head looks at a point
//! circling in front of it ([`IkLookAt`]), the right hand aims its forward axis at a second
//! point ([`IkAim`]), the forearm twist is spread over twist bones where the rig has them
//! ([`IkTwist`]), and `Space` makes the left hand reach for a cup and back ([`IkReach`] moving
//! the target of an [`IkLimb`] and fading its weight).
//!
//! ```text
//! cargo run --features demo --example behaviours [-- CHARACTER.glb]
//! ```
//!
//! Every behaviour is a stage entity of the character (`IkStageOf(character)`); the bones are
//! found by humanoid role on the character, so any humanoid glTF with recognisable bone names
//! works.

use bevy::prelude::*;
use bevy::world_serialization::WorldInstanceReady;
use bevy_ik::ik_core::humanoid::HumanoidBone;
use bevy_ik::prelude::*;

/// The point the head follows.
#[derive(Component)]
struct Circling;

/// The entity the left hand's limb follows (moved by `IkReach`).
#[derive(Component)]
struct Reach;

fn main() {
    let file = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "character.glb".to_owned());
    App::new()
        .add_plugins((DefaultPlugins, IkPlugin::default()))
        .insert_resource(CharacterFile(file))
        .add_systems(Startup, setup)
        .add_systems(Update, (circle, toggle_reach))
        .run();
}

#[derive(Resource)]
struct CharacterFile(String);

fn setup(
    mut commands: Commands,
    file: Res<CharacterFile>,
    assets: Res<AssetServer>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    commands.spawn((
        Camera3d::default(),
        Transform::from_xyz(1.6, 1.5, 2.6).looking_at(Vec3::new(0.0, 1.1, 0.0), Vec3::Y),
    ));
    commands.spawn((
        DirectionalLight::default(),
        Transform::from_xyz(2.0, 4.0, 3.0).looking_at(Vec3::ZERO, Vec3::Y),
    ));
    let mut marker = |color: Color, at: Vec3| {
        (
            Mesh3d(meshes.add(Sphere::new(0.04))),
            MeshMaterial3d(materials.add(StandardMaterial {
                base_color: color,
                unlit: true,
                ..default()
            })),
            Transform::from_translation(at),
        )
    };
    let look = commands
        .spawn((
            marker(Color::srgb(0.2, 0.9, 1.0), Vec3::new(0.0, 1.6, 1.0)),
            Circling,
        ))
        .id();
    let aim = commands
        .spawn(marker(
            Color::srgb(1.0, 0.3, 0.2),
            Vec3::new(-0.6, 1.4, 1.4),
        ))
        .id();
    let cup = commands
        .spawn(marker(
            Color::srgb(1.0, 0.8, 0.2),
            Vec3::new(0.35, 1.0, 0.35),
        ))
        .id();
    commands
        .spawn(WorldAssetRoot(
            assets.load(GltfAssetLabel::Scene(0).from_asset(file.0.clone())),
        ))
        .observe(
            move |ready: On<WorldInstanceReady>,
                  mut commands: Commands,
                  names: Query<(Entity, &Name)>| {
                let character = ready.entity;
                // Stages run in the order they are added, after any stage on the character.
                commands.spawn((IkLookAt::at(look), IkStageOf(character)));
                commands.spawn((
                    IkAim {
                        target: Some(aim),
                        root: HumanoidBone::Chest.into(),
                        tip: HumanoidBone::RightHand.into(),
                        // "Forward" and "up" as the character stands at set-up: no need to
                        // know the hand bone's own axes.
                        axis: Vec3::Z,
                        origin: Vec3::new(0.0, 0.0, 0.1),
                        pole_axis: Some(Vec3::Y),
                        model_space_axes: true,
                        ..default()
                    },
                    IkStageOf(character),
                ));
                commands.spawn((IkTwist::default(), IkStageOf(character)));
                // Reaching: a limb on the left arm follows an entity that IkReach moves from
                // the animated hand to the cup; the limb's weight fades with it.
                let hand = names
                    .iter()
                    .find(|(_, n)| {
                        HumanoidBone::from_bone_name(n.as_str()) == Some(HumanoidBone::LeftHand)
                    })
                    .map(|(e, _)| e);
                let proxy = commands.spawn((Transform::default(), Reach)).id();
                let limb = commands
                    .spawn((
                        IkLimb {
                            target: Some(proxy),
                            weight: 0.0,
                            ..IkLimb::new(
                                HumanoidBone::LeftUpperArm,
                                HumanoidBone::LeftLowerArm,
                                HumanoidBone::LeftHand,
                            )
                        },
                        IkStageOf(character),
                    ))
                    .id();
                commands.entity(proxy).insert(IkReach {
                    character: Some(character),
                    effector: hand.map(Into::into),
                    target: Some(cup),
                    duration: 0.8,
                    fade_stage: Some(limb),
                    ..default()
                });
            },
        );
}

/// Moves the look-at point on a circle in front of the character (through its sides).
fn circle(time: Res<Time>, mut points: Query<&mut Transform, With<Circling>>) {
    let t = time.elapsed_secs() * 0.6;
    for mut p in &mut points {
        p.translation = Vec3::new(
            1.2 * t.sin(),
            1.55 + 0.25 * (2.0 * t).sin(),
            1.0 * t.cos().abs() + 0.2,
        );
    }
}

/// `Space`: reach for the cup, or let go.
fn toggle_reach(keys: Res<ButtonInput<KeyCode>>, mut reaches: Query<&mut IkReach, With<Reach>>) {
    if keys.just_pressed(KeyCode::Space) {
        for mut r in &mut reaches {
            r.engaged = !r.engaged;
        }
    }
}
