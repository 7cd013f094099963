//! The acceptance rule of bounded tracking (see the `track` module docs, *Steps and the
//! acceptance rule*): which candidate of a frame is kept, judged on the lexicographic cost
//! (module `levels`) level by level, and the analytic candidate's parts (the hips' pin, each
//! limb's finish, the look-at finish) each on its own level.

use super::levels::{Costs, LEVELS};

/// A candidate must lower the deciding level's cost by at least this fraction of it (and its
/// residual, the cost's root in tolerances, by at least one tolerance, or to 0; see
/// [`better`]): a step that gains less is not kept, so a goal that can only be crept toward
/// (a rotation turned in along a limit, a look-at sliding along the trunk's limits) stops
/// within a few frames instead of creeping for hundreds. Chosen on the robustness suite, full
/// size (`docs/benchmarks.md`, *The acceptance ratio*): 0.025 settles every still hand-beyond
/// and hand-far run by frame 30; 0.05 and 0.1 leave a `KayKit` look-at along the limits and a
/// reachable hand next to a far one short.
pub(super) const ACCEPT_RATIO: f32 = 0.025;

/// A set of levels (bit `l` for level `l`): those whose parts an analytic candidate carries
/// (the hips' pin, their limbs' finishes, the look-at finish; see `Solve::candidate`).
pub(super) type Parts = u128;
/// Every level's parts.
pub(super) const ALL_PARTS: Parts = Parts::MAX >> (Parts::BITS as usize - LEVELS);

/// The acceptance rule's verdict on a candidate ([`better`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Kept.
    Better,
    /// Not kept: no level fell by its threshold, or one above the deciding level rose.
    Worse,
    /// The deciding level fell and none above it rose, but these levels after it, whose parts
    /// the candidate carries, rose: whether their parts did that is judged next.
    LowerRose(Parts),
}

/// The acceptance rule (the `track` module docs) on a candidate carrying `parts`: the first
/// level that falls by [`ACCEPT_RATIO`] of its cost and its residual (the cost's root, in
/// tolerances) by one tolerance or to 0 (the deciding one), no level before it rose at all,
/// and no level after it whose part the candidate carries rose ([`Verdict::LowerRose`]; a
/// Gauss–Newton candidate is judged as a whole: `parts` empty).
pub(super) fn better(old: &Costs, new: &Costs, parts: Parts) -> Verdict {
    let mut levels = old.level.iter().zip(&new.level).enumerate();
    for (_, (&o, &n)) in levels.by_ref() {
        if n.is_nan() || n > o {
            return Verdict::Worse;
        }
        if n < o - ACCEPT_RATIO * o && (n == 0.0 || n.sqrt() <= o.sqrt() - 1.0) {
            let rose = levels
                .filter(|&(l, (&o, &n))| parts >> l & 1 != 0 && n > o)
                .fold(0, |m, (l, _)| m | 1 << l);
            return match rose {
                0 => Verdict::Better,
                _ => Verdict::LowerRose(rose),
            };
        }
    }
    Verdict::Worse
}
