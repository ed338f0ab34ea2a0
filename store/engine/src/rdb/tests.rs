//! Decoding and encoding whole payloads: Redis-produced fixtures, round
//! trips, every decode error path, and a seeded fuzz of mutated payloads.
