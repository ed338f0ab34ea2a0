//! The geometry of a search, as Redis's `geohash_helper.c` does it: the
//! search shape (a circle or an axis-aligned box around a centre), its
//! bounding box, the hash precision (step) whose cells cover it, the nine
//! cells to scan, and the haversine distances that decide what is inside.

use super::hash::{self, HashBits, Neighbors, LAT_RANGE, LONG_RANGE};

/// Earth's quadratic mean radius for WGS-84, Redis's constant.
pub const EARTH_RADIUS_IN_METERS: f64 = 6372797.560856;

const MERCATOR_MAX: f64 = 20037726.37;
const D_R: f64 = std::f64::consts::PI / 180.0;

fn deg_rad(angle: f64) -> f64 {
    angle * D_R
}

fn rad_deg(angle: f64) -> f64 {
    angle / D_R
}

/// What a search covers, in the unit it was given in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Extent {
    Radius(f64),
    Box { width: f64, height: f64 },
}

/// A search shape (`GeoShape`): an extent around a centre.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shape {
    pub extent: Extent,
    /// Longitude and latitude of the centre.
    pub xy: [f64; 2],
    /// Meters per unit of the extent.
    pub conversion: f64,
}

/// The cells a search scans (`GeoHashRadius`): the centre's and its
/// neighbours, the useless ones zeroed.
#[derive(Debug, Clone, Copy)]
pub struct Cells {
    pub hash: HashBits,
    pub neighbors: Neighbors,
}

impl Cells {
    /// The nine cells in the order Redis scans them.
    pub fn in_scan_order(&self) -> [HashBits; 9] {
        let n = &self.neighbors;
        [self.hash, n.north, n.south, n.east, n.west, n.north_east, n.north_west, n.south_east, n.south_west]
    }
}

/// The hash precision whose cells are about as wide as the search
/// (`geohashEstimateStepsByRadius`), coarser towards the poles.
pub fn estimate_steps_by_radius(range_meters: f64, latitude: f64) -> u8 {
    if range_meters == 0.0 {
        return 26;
    }
    let mut range = range_meters;
    let mut step: i32 = 1;
    while range < MERCATOR_MAX {
        range *= 2.0;
        step += 1;
    }
    step -= 2;
    if !(-66.0..=66.0).contains(&latitude) {
        step -= 1;
        if !(-80.0..=80.0).contains(&latitude) {
            step -= 1;
        }
    }
    step.clamp(1, 26) as u8
}

/// The shape's bounding box (`geohashBoundingBox`): minimum longitude,
/// minimum latitude, maximum longitude, maximum latitude.
pub fn bounding_box(shape: &Shape) -> [f64; 4] {
    let [longitude, latitude] = shape.xy;
    let (height, width) = match shape.extent {
        Extent::Radius(r) => (shape.conversion * r, shape.conversion * r),
        Extent::Box { width, height } => (shape.conversion * (height / 2.0), shape.conversion * (width / 2.0)),
    };
    let lat_delta = rad_deg(height / EARTH_RADIUS_IN_METERS);
    let long_delta_top = rad_deg(width / EARTH_RADIUS_IN_METERS / deg_rad(latitude + lat_delta).cos());
    let long_delta_bottom = rad_deg(width / EARTH_RADIUS_IN_METERS / deg_rad(latitude - lat_delta).cos());
    // The box is widest at the edge nearer the equator.
    let long_delta = if latitude < 0.0 { long_delta_bottom } else { long_delta_top };
    [longitude - long_delta, latitude - lat_delta, longitude + long_delta, latitude + lat_delta]
}

/// The distance from the centre that the search must reach, in meters: the
/// radius, or the half-diagonal of a box.
fn reach_meters(shape: &Shape) -> f64 {
    let reach = match shape.extent {
        Extent::Radius(r) => r,
        Extent::Box { width, height } => ((width / 2.0) * (width / 2.0) + (height / 2.0) * (height / 2.0)).sqrt(),
    };
    reach * shape.conversion
}

/// The centre's cell at `step` steps, its neighbours and its area.
fn cells_at(shape: &Shape, step: u8) -> (HashBits, Neighbors, hash::Area) {
    let [longitude, latitude] = shape.xy;
    let center = hash::encode(LONG_RANGE, LAT_RANGE, longitude, latitude, step).unwrap_or_default();
    let area = hash::decode(LONG_RANGE, LAT_RANGE, center).unwrap_or_default();
    (center, hash::neighbors(center), area)
}

/// Whether a neighbour cell stops short of the bounding box, so that nine
/// cells at this step would miss part of the search.
fn neighbors_fall_short(neighbors: &Neighbors, bounds: &[f64; 4]) -> bool {
    let [min_lon, min_lat, max_lon, max_lat] = *bounds;
    let area = |h: HashBits| hash::decode(LONG_RANGE, LAT_RANGE, h).unwrap_or_default();
    area(neighbors.north).latitude.max < max_lat
        || area(neighbors.south).latitude.min > min_lat
        || area(neighbors.east).longitude.max < max_lon
        || area(neighbors.west).longitude.min > min_lon
}

/// The cells that cover the shape (`geohashCalculateAreasByShapeWGS84`).
pub fn cells_covering(shape: &Shape) -> Cells {
    let bounds = bounding_box(shape);
    let [min_lon, min_lat, max_lon, max_lat] = bounds;
    let mut step = estimate_steps_by_radius(reach_meters(shape), shape.xy[1]);
    let (mut center, mut neighbors, mut area) = cells_at(shape, step);
    if step > 1 && neighbors_fall_short(&neighbors, &bounds) {
        step -= 1;
        (center, neighbors, area) = cells_at(shape, step);
    }
    if step >= 2 {
        let n = &mut neighbors;
        if area.latitude.min < min_lat {
            n.south = HashBits::default();
            n.south_west = HashBits::default();
            n.south_east = HashBits::default();
        }
        if area.latitude.max > max_lat {
            n.north = HashBits::default();
            n.north_east = HashBits::default();
            n.north_west = HashBits::default();
        }
        if area.longitude.min < min_lon {
            n.west = HashBits::default();
            n.south_west = HashBits::default();
            n.north_west = HashBits::default();
        }
        if area.longitude.max > max_lon {
            n.east = HashBits::default();
            n.south_east = HashBits::default();
            n.north_east = HashBits::default();
        }
    }
    Cells { hash: center, neighbors }
}

/// The distance along a meridian between two latitudes (`geohashGetLatDistance`).
pub fn lat_distance(lat1: f64, lat2: f64) -> f64 {
    EARTH_RADIUS_IN_METERS * (deg_rad(lat2) - deg_rad(lat1)).abs()
}

/// The haversine great-circle distance in meters (`geohashGetDistance`).
pub fn distance(lon1: f64, lat1: f64, lon2: f64, lat2: f64) -> f64 {
    let lon1r = deg_rad(lon1);
    let lon2r = deg_rad(lon2);
    let v = ((lon2r - lon1r) / 2.0).sin();
    if v == 0.0 {
        return lat_distance(lat1, lat2);
    }
    let lat1r = deg_rad(lat1);
    let lat2r = deg_rad(lat2);
    let u = ((lat2r - lat1r) / 2.0).sin();
    let a = u * u + lat1r.cos() * lat2r.cos() * v * v;
    2.0 * EARTH_RADIUS_IN_METERS * a.sqrt().asin()
}

/// The distance from the shape's centre to a point, when the point is inside
/// the shape (`geoWithinShape`, after decoding).
pub fn distance_if_within(shape: &Shape, longitude: f64, latitude: f64) -> Option<f64> {
    let [x, y] = shape.xy;
    match shape.extent {
        Extent::Radius(r) => {
            let d = distance(x, y, longitude, latitude);
            (d <= r * shape.conversion).then_some(d)
        }
        Extent::Box { width, height } => {
            let (width_m, height_m) = (width * shape.conversion, height * shape.conversion);
            // Latitude first: it is the cheaper distance.
            if lat_distance(latitude, y) > height_m / 2.0 {
                return None;
            }
            if distance(longitude, latitude, x, latitude) > width_m / 2.0 {
                return None;
            }
            Some(distance(x, y, longitude, latitude))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_by_radius() {
        assert_eq!(estimate_steps_by_radius(0.0, 0.0), 26);
        assert_eq!(estimate_steps_by_radius(50_000_000.0, 0.0), 1);
        // 3 km: 20037726 / 3000 ~ 2^12.7, so 13 doublings, step 14 - 2.
        assert_eq!(estimate_steps_by_radius(3000.0, 40.0), 12);
        assert_eq!(estimate_steps_by_radius(3000.0, 70.0), 11);
        assert_eq!(estimate_steps_by_radius(3000.0, -85.0), 10);
    }

    #[test]
    fn distances() {
        // Palermo to Catania as stored (their decoded positions), as Redis's
        // GEODIST documents it.
        let stored = |lon, lat| hash::decode_score(hash::score_of(lon, lat).expect("valid") as f64).expect("decodes");
        let [lon1, lat1] = stored(13.361389, 38.115556);
        let [lon2, lat2] = stored(15.087269, 37.502669);
        assert_eq!(super::super::format::distance(distance(lon1, lat1, lon2, lat2)), "166274.1516");
        assert_eq!(distance(1.0, 2.0, 1.0, 3.0), lat_distance(2.0, 3.0));
    }

    #[test]
    fn a_huge_radius_scans_the_whole_world_once_per_cell() {
        let shape = Shape { extent: Extent::Radius(50_000.0), xy: [0.0, 0.0], conversion: 1000.0 };
        let cells = cells_covering(&shape);
        assert_eq!(cells.hash.step, 1);
        assert!(cells.in_scan_order().iter().all(|c| c.step == 1));
    }

    #[test]
    fn boxes_contain_their_edges() {
        let shape = Shape { extent: Extent::Box { width: 2.0, height: 2.0 }, xy: [0.0, 0.0], conversion: 1000.0 };
        assert!(distance_if_within(&shape, 0.0, 0.0).is_some());
        assert!(distance_if_within(&shape, 0.0089, 0.0).is_some());
        assert!(distance_if_within(&shape, 0.0, 0.0091).is_none());
    }
}
