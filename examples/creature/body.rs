//! The creature's body: a capsule from each joint to its parent's, hung on the parent bone, so
//! the meshes follow the solved bones. Shared by `examples/creature.rs` and the demo's creature
//! mode (the headless test needs no meshes and does not include it).

use bevy::prelude::*;

use super::rig;

/// Spawns the body meshes on `bones` (from [`rig::spawn_skeleton`]) and makes the bones take
/// part in visibility.
pub fn spawn_body(
    commands: &mut Commands,
    meshes: &mut Assets<Mesh>,
    materials: &mut Assets<StandardMaterial>,
    bones: &[Entity],
) {
    for &b in bones {
        commands.entity(b).insert(Visibility::default());
    }
    let fur = materials.add(Color::srgb(0.62, 0.45, 0.3));
    let locals = rig::rest_locals();
    for (i, &(name, parent, _)) in rig::JOINTS.iter().enumerate() {
        let Some(p) = parent else { continue };
        let offset = locals[i].translation;
        let radius = match name {
            n if n.starts_with("tail") => 0.035,
            n if n.contains("upper") || n.contains("lower") => 0.04,
            n if n.contains("foot") || n.contains("toe") => 0.03,
            "spine" | "chest" => 0.14,
            "snout" => 0.07,
            _ => 0.08,
        };
        commands.spawn((
            Mesh3d(meshes.add(Capsule3d::new(radius, offset.length()))),
            MeshMaterial3d(fur.clone()),
            Transform::from_translation(offset / 2.0)
                .with_rotation(Quat::from_rotation_arc(Vec3::Y, offset.normalize())),
            ChildOf(bones[p]),
        ));
    }
}
