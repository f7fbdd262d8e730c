//! GPU peers built outside the workspace from their own sources (`peers/`, see its README),
//! loaded at run time so that they run in this process on the same batch as ours. A peer that
//! is not built is skipped with a note; one that is built but fails or disagrees with us is an
//! error.

use ark_ec::AffineRepr;
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use batchcrypt::msm::{Affine, Group};
use std::path::PathBuf;

/// Where built peers are: `$BATCHCRYPT_PEERS`, else `peers/out` under the working directory.
fn root() -> PathBuf {
    std::env::var_os("BATCHCRYPT_PEERS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("peers/out"))
}

/// sppark's Pippenger (the MSM under supraseal), through a small C driver of ours
/// (`peers/sppark/msm_bench.cu`): canonical little-endian field elements in and out.
pub struct Sppark {
    lib: libloading::Library,
}

/// `int f(points, scalars, n, out, seconds)`.
type MsmFn = unsafe extern "C" fn(*const u8, *const u8, usize, *mut u8, *mut f64) -> i32;

impl Sppark {
    /// The driver library, if it was built.
    pub fn load() -> Option<Sppark> {
        let path = root().join("sppark/libsppark_msm.so");
        if !path.exists() {
            println!(
                "(sppark not built: no {}; see peers/README.md)",
                path.display()
            );
            return None;
        }
        // SAFETY: our own driver library; loading runs no initialisers beyond the C++ runtime's.
        match unsafe { libloading::Library::new(&path) } {
            Ok(lib) => Some(Sppark { lib }),
            Err(e) => {
                println!("(sppark not loaded from {}: {e})", path.display());
                None
            }
        }
    }

    /// `sum k_i P_i` over `batch` on group `P` of `curve` ("bn254", "bls12-381"; `group` "g1",
    /// "g2") and the seconds of sppark's call alone: with `resident`, the points uploaded first
    /// (untimed) and only the MSM on scalars from host memory timed, as our "bases resident"
    /// rows; else the whole call from host memory.
    pub fn msm<P: Group>(
        &self,
        curve: &str,
        group: &str,
        batch: &Batch,
        resident: bool,
    ) -> anyhow::Result<(Affine<P>, f64)> {
        let name = format!(
            "sppark_{}_{group}_msm{}",
            curve.replace('-', "_"),
            if resident { "_resident" } else { "" }
        );
        // SAFETY: the driver's documented signature (peers/sppark/msm_bench.cu).
        let f: libloading::Symbol<MsmFn> = unsafe { self.lib.get(name.as_bytes()) }?;
        let mut out = vec![0u8; batch.point_bytes];
        let mut seconds = 0f64;
        // SAFETY: `batch.n` points and scalars in the layouts the driver reads; `out` holds one
        // point.
        let rc = unsafe {
            f(
                batch.points.as_ptr(),
                batch.scalars.as_ptr(),
                batch.n,
                out.as_mut_ptr(),
                &mut seconds,
            )
        };
        anyhow::ensure!(rc == 0, "{name} failed ({rc})");
        Ok((from_canonical::<P>(&out)?, seconds))
    }
}

/// An MSM's points and scalars in the driver's layout, converted once for all its calls.
pub struct Batch {
    points: Vec<u8>,
    scalars: Vec<u8>,
    n: usize,
    point_bytes: usize,
}

impl Batch {
    pub fn new<P: Group>(
        points: &[Affine<P>],
        scalars: &[P::ScalarField],
    ) -> anyhow::Result<Batch> {
        anyhow::ensure!(points.len() == scalars.len(), "a point per scalar");
        Ok(Batch {
            points: canonical_points(points)?,
            scalars: canonical(scalars)?,
            n: scalars.len(),
            point_bytes: 2 * P::BaseField::default().uncompressed_size(),
        })
    }
}

/// Elements as canonical little-endian integers, one after another.
fn canonical<T: CanonicalSerialize>(xs: &[T]) -> anyhow::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(xs.len() * xs.first().map_or(0, |x| x.uncompressed_size()));
    for x in xs {
        x.serialize_uncompressed(&mut out)?;
    }
    Ok(out)
}

/// Affine points as x then y, canonical; infinity as zeros.
fn canonical_points<P: Group>(points: &[Affine<P>]) -> anyhow::Result<Vec<u8>> {
    let w = P::BaseField::default().uncompressed_size();
    let mut out = Vec::with_capacity(2 * w * points.len());
    for p in points {
        match p.xy() {
            Some((x, y)) => {
                x.serialize_uncompressed(&mut out)?;
                y.serialize_uncompressed(&mut out)?;
            }
            None => out.resize(out.len() + 2 * w, 0),
        }
    }
    Ok(out)
}

fn from_canonical<P: Group>(raw: &[u8]) -> anyhow::Result<Affine<P>> {
    if raw.iter().all(|&b| b == 0) {
        return Ok(Affine::<P>::identity());
    }
    let (x, y) = raw.split_at(raw.len() / 2);
    Ok(Affine::<P>::new_unchecked(
        P::BaseField::deserialize_uncompressed(x)?,
        P::BaseField::deserialize_uncompressed(y)?,
    ))
}
