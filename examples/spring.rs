//! A ponytail on the bundled character: five bones added under its head at run time, a
//! spring chain (`IkSpringChain`) with a sphere collider on the head so the hair slides over
//! it. The character turns back and forth and walks a little, so the hair swings.
//!
//! `cargo run --example spring --features demo` (`R` resets the hair to the pose;
//! `--screenshot PATH [--after SECONDS]` saves a frame and quits)

#[path = "support/screenshot.rs"]
mod screenshot;

use bevy::prelude::*;
use bevy::world_serialization::WorldInstanceReady;
use bevy_ik::prelude::*;

/// The bundled character's head bone.
const HEAD: &str = "mixamorig:Head";
/// The ponytail's bones: the first offset from the head (in the head bone's frame of this
/// character: Y up, +Z ahead), the others from the one before.
const HAIR: [[f32; 3]; 5] = [
    [0.0, 0.14, -0.11],
    [0.0, -0.02, -0.07],
    [0.0, -0.07, -0.03],
    [0.0, -0.07, -0.01],
    [0.0, -0.07, 0.0],
];

fn main() {
    App::new()
        .add_plugins((DefaultPlugins, IkPlugin::default()))
        .add_plugins(screenshot::ScreenshotOption)
        .add_systems(Startup, setup)
        .add_systems(Update, (sway, reset))
        .run();
}

#[derive(Component)]
struct Swaying;

#[derive(Component)]
struct Hair;

fn setup(
    mut commands: Commands,
    assets: Res<AssetServer>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    commands.spawn((
        Camera3d::default(),
        Transform::from_xyz(-1.6, 1.7, -1.6).looking_at(Vec3::new(0.0, 1.4, 0.0), Vec3::Y),
    ));
    commands.spawn((
        DirectionalLight::default(),
        Transform::from_xyz(-2.0, 4.0, -1.0).looking_at(Vec3::ZERO, Vec3::Y),
    ));
    commands.spawn((
        Mesh3d(meshes.add(Plane3d::default().mesh().size(6.0, 6.0))),
        MeshMaterial3d(materials.add(Color::srgb(0.5, 0.5, 0.55))),
    ));
    let strand = meshes.add(Sphere::new(0.035));
    let colour = materials.add(Color::srgb(0.35, 0.2, 0.1));
    commands
        .spawn((
            WorldAssetRoot(assets.load(GltfAssetLabel::Scene(0).from_asset("character.glb"))),
            Swaying,
        ))
        .observe(
            move |ready: On<WorldInstanceReady>,
                  mut commands: Commands,
                  names: Query<(Entity, &Name)>| {
                let character = ready.entity;
                let Some((head, _)) = names.iter().find(|(_, n)| n.as_str() == HEAD) else {
                    warn!("no bone named {HEAD}");
                    return;
                };
                // The ponytail's bones, each with a ball of hair.
                let mut parent = head;
                let mut bones = Vec::new();
                for (i, offset) in HAIR.iter().enumerate() {
                    let bone = commands
                        .spawn((
                            Name::new(format!("ponytail{i}")),
                            Transform::from_translation(Vec3::from_array(*offset)),
                            Visibility::default(),
                            ChildOf(parent),
                        ))
                        .id();
                    commands.spawn((
                        Mesh3d(strand.clone()),
                        MeshMaterial3d(colour.clone()),
                        Transform::default(),
                        ChildOf(bone),
                    ));
                    bones.push(bone);
                    parent = bone;
                }
                // The head as a collider: the hair slides over it.
                let skull = commands
                    .spawn((
                        Transform::from_xyz(0.0, 0.1, 0.0),
                        IkSpringCollider {
                            shape: IkColliderShape::Sphere {
                                offset: Vec3::ZERO,
                                radius: 0.1,
                            },
                        },
                        ChildOf(head),
                    ))
                    .id();
                let params = IkSpringJoint {
                    stiffness: 0.6,
                    gravity_power: 0.4,
                    drag_force: 0.25,
                    hit_radius: 0.03,
                    ..IkSpringJoint::default()
                };
                commands.spawn((
                    Name::new("ponytail"),
                    IkSpringChain::uniform(bones, &params).with_colliders([skull]),
                    IkStageOf(character),
                    Hair,
                ));
            },
        );
}

/// Turns back and forth about the vertical and steps side to side.
fn sway(time: Res<Time>, mut q: Query<&mut Transform, With<Swaying>>) {
    let t = time.elapsed_secs();
    for mut tr in &mut q {
        tr.rotation = Quat::from_rotation_y(0.9 * (1.6 * t).sin());
        tr.translation.x = 0.3 * (0.8 * t).sin();
    }
}

/// `R`: the hair starts again from the pose.
fn reset(keys: Res<ButtonInput<KeyCode>>, mut commands: Commands, hair: Query<Entity, With<Hair>>) {
    if keys.just_pressed(KeyCode::KeyR) {
        for e in &hair {
            commands.entity(e).insert(IkSpringReset);
        }
    }
}
