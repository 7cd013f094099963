//! TODO(humanoid): being written.
