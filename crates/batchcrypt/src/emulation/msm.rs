//! The MSM kernels of any group run on the host (`BC_MSM_SCALAR_STEPS` and `BC_MSM_POINT_STEPS`
//! of `bc/msm.cuh`), chained by the same [`crate::msm::window_sums_chunked`] as on the GPU.

use crate::error::Result;
use crate::msm::{window_sums_chunked, Kernels, Shape};

/// One group's MSM kernels compiled for the host: the scalar steps of its curve and its point
/// steps.
pub struct MsmSteps {
    pub digits: unsafe extern "C" fn(
        *const u32,
        u32,
        u64,
        u32,
        u64,
        u64,
        u64,
        u32,
        u32,
        u32,
        u32,
        *mut u32,
        *mut u32,
    ),
    pub scan_tiles: unsafe extern "C" fn(*mut u32, u64, u32, *mut u32),
    pub scan_add: unsafe extern "C" fn(*mut u32, u64, u32, *const u32),
    pub scatter:
        unsafe extern "C" fn(*const u32, u64, u32, u32, u32, u32, u32, u32, *mut u32, *mut u32),
    pub accumulate_points: unsafe extern "C" fn(
        *const u32,
        *const u32,
        *const u32,
        u32,
        u64,
        u32,
        *mut u32,
        *mut u32,
        *mut u32,
    ),
    pub accumulate_partials:
        unsafe extern "C" fn(*const u32, *const u32, u64, u32, *mut u32, *mut u32, *mut u32),
    pub add_buckets: unsafe extern "C" fn(*mut u32, *const u32, u64),
    pub window_segments: unsafe extern "C" fn(*const u32, u32, u32, u32, *mut u32),
    pub sum_groups: unsafe extern "C" fn(*const u32, u64, u32, *mut u32),
    pub shift_bases: unsafe extern "C" fn(*const u32, u64, u32, *mut u32),
}

/// A group's [`MsmSteps`] from its kernels' host symbols, named as `bc/msm.cuh` exports them: the
/// curve's scalar steps (`<curve>_msm_digits`, shared by its groups) and the group's point steps
/// (`<curve>_<group>_msm_accumulate_points`).
macro_rules! msm_steps {
    ($curve:literal, $group:literal) => {{
        extern "C" {
            #[link_name = concat!($curve, "_msm_digits")]
            fn digits(
                scalars: *const u32,
                montgomery: u32,
                n: u64,
                first: u32,
                points: u64,
                from: u64,
                to: u64,
                c: u32,
                windows: u32,
                off: u32,
                sets: u32,
                digits: *mut u32,
                counts: *mut u32,
            );
            #[link_name = concat!($curve, "_msm_scan_tiles")]
            fn scan_tiles(data: *mut u32, m: u64, tile: u32, totals: *mut u32);
            #[link_name = concat!($curve, "_msm_scan_add")]
            fn scan_add(data: *mut u32, m: u64, tile: u32, offsets: *const u32);
            #[link_name = concat!($curve, "_msm_scatter")]
            fn scatter(
                digits: *const u32,
                n: u64,
                first: u32,
                c: u32,
                windows: u32,
                off: u32,
                sets: u32,
                stride: u32,
                cursor: *mut u32,
                entries: *mut u32,
            );
            #[link_name = concat!($curve, "_", $group, "_msm_accumulate_points")]
            fn accumulate_points(
                bases: *const u32,
                entries: *const u32,
                ends: *const u32,
                buckets_len: u32,
                total: u64,
                slice: u32,
                buckets: *mut u32,
                next_keys: *mut u32,
                next_pts: *mut u32,
            );
            #[link_name = concat!($curve, "_", $group, "_msm_accumulate_partials")]
            fn accumulate_partials(
                pts: *const u32,
                keys: *const u32,
                total: u64,
                slice: u32,
                buckets: *mut u32,
                next_keys: *mut u32,
                next_pts: *mut u32,
            );
            #[link_name = concat!($curve, "_", $group, "_msm_add_buckets")]
            fn add_buckets(acc: *mut u32, more: *const u32, count: u64);
            #[link_name = concat!($curve, "_", $group, "_msm_window_segments")]
            fn window_segments(
                buckets: *const u32,
                per_window: u32,
                windows: u32,
                per: u32,
                out: *mut u32,
            );
            #[link_name = concat!($curve, "_", $group, "_msm_sum_groups")]
            fn sum_groups(input: *const u32, groups: u64, m: u32, out: *mut u32);
            #[link_name = concat!($curve, "_", $group, "_msm_shift_bases")]
            fn shift_bases(input: *const u32, n: u64, doublings: u32, out: *mut u32);
        }
        $crate::emulation::msm::MsmSteps {
            digits,
            scan_tiles,
            scan_add,
            scatter,
            accumulate_points,
            accumulate_partials,
            add_buckets,
            window_segments,
            sum_groups,
            shift_bases,
        }
    }};
}
pub(crate) use msm_steps;

/// Each window's sum (Jacobian points of `point_words` words, as the kernels store them) of the
/// MSM of `scalars` (the scalar field's limbs, eight words each: Montgomery ones where
/// `montgomery`, else canonical integers) over each set of `bases` (affine
/// points, `2 / 3 point_words` words each, infinity as zeros) in shape `s`, with the shifted
/// copies of the bases that `s` reads computed by the kernel code too. The scalars are taken in
/// chunks doubling from `chunk` scalars ([`crate::msm::chunks`]; `None`: all at once) and each
/// chunk sorted into buckets once for all the sets, as on the GPU.
pub fn window_sums(
    steps: &MsmSteps,
    point_words: usize,
    bases: &[&[u32]],
    scalars: &[u32],
    montgomery: bool,
    s: &Shape,
    chunk: Option<usize>,
) -> Result<Vec<Vec<u32>>> {
    let copies: Vec<Vec<u32>> = bases
        .iter()
        .map(|bases| {
            let len = bases.len() / (2 * point_words / 3);
            let mut raw = vec![0u32; bases.len() * s.copies() as usize];
            // Copy j of the part is copy first_copy + j of the bases.
            let first = s.shift() * s.first_copy();
            if first == 0 {
                raw[..bases.len()].copy_from_slice(bases);
            } else {
                // SAFETY: `len` points in, `len` points out.
                unsafe { (steps.shift_bases)(bases.as_ptr(), len as u64, first, raw.as_mut_ptr()) };
            }
            for j in 1..s.copies() as usize {
                let (prev, next) = raw.split_at_mut(j * bases.len());
                // SAFETY: copy j - 1 and copy j hold `len` points each.
                unsafe {
                    (steps.shift_bases)(
                        prev[(j - 1) * bases.len()..].as_ptr(),
                        len as u64,
                        s.shift(),
                        next.as_mut_ptr(),
                    )
                };
            }
            raw
        })
        .collect();
    let Some(first) = copies.first() else {
        return Ok(Vec::new());
    };
    let mut host = Host {
        bases: first,
        steps,
        point_words,
        montgomery,
    };
    let words = crate::msm::SCALAR_WORDS;
    let chunks = match chunk {
        Some(first) => crate::msm::chunks(s.n, first, 2, usize::MAX),
        None => vec![0..s.n],
    };
    window_sums_chunked(
        &mut host,
        s,
        copies.len(),
        &chunks,
        |host, j| host.bases = &copies[j],
        |_, c| Ok(scalars[chunks[c].start * words..chunks[c].end * words].to_vec()),
    )
}

struct Host<'a> {
    bases: &'a [u32],
    steps: &'a MsmSteps,
    point_words: usize,
    montgomery: bool,
}

// SAFETY (every call below): `msm::window_sums` sizes each buffer for the items the kernel walks,
// as on the GPU.
impl Kernels for Host<'_> {
    type Words = Vec<u32>;
    type Points = Vec<u32>;

    fn words(&mut self, len: u64, _zeroed: bool) -> Result<Vec<u32>> {
        Ok(vec![0; len.max(1) as usize])
    }
    fn points(&mut self, len: u64, _zeroed: bool) -> Result<Vec<u32>> {
        Ok(vec![0; len.max(1) as usize * self.point_words])
    }
    fn digits(
        &mut self,
        scalars: &Vec<u32>,
        s: &Shape,
        first: u32,
        digits: &mut Vec<u32>,
        counts: &mut Vec<u32>,
    ) -> Result<()> {
        unsafe {
            (self.steps.digits)(
                scalars.as_ptr(),
                u32::from(self.montgomery),
                s.n as u64,
                first,
                s.points as u64,
                s.from,
                s.to,
                s.c,
                s.windows,
                s.off,
                s.sets,
                digits.as_mut_ptr(),
                counts.as_mut_ptr(),
            )
        };
        Ok(())
    }
    fn scan_tiles(
        &mut self,
        data: &mut Vec<u32>,
        m: u64,
        tile: u32,
        totals: &mut Vec<u32>,
    ) -> Result<()> {
        unsafe { (self.steps.scan_tiles)(data.as_mut_ptr(), m, tile, totals.as_mut_ptr()) };
        Ok(())
    }
    fn scan_add(
        &mut self,
        data: &mut Vec<u32>,
        m: u64,
        tile: u32,
        offsets: &Vec<u32>,
    ) -> Result<()> {
        unsafe { (self.steps.scan_add)(data.as_mut_ptr(), m, tile, offsets.as_ptr()) };
        Ok(())
    }
    fn resident(&mut self) -> Result<u64> {
        // A small GPU's worth, so that the tests' batches take first levels of several waves.
        Ok(1 << 8)
    }
    fn queue(&mut self, _q: crate::msm::Queue) {}
    fn first_word(&mut self, w: &Vec<u32>) -> Result<u32> {
        Ok(w[0])
    }
    fn scatter(
        &mut self,
        digits: &Vec<u32>,
        s: &Shape,
        first: u32,
        cursor: &mut Vec<u32>,
        entries: &mut Vec<u32>,
    ) -> Result<()> {
        unsafe {
            (self.steps.scatter)(
                digits.as_ptr(),
                s.n as u64,
                first,
                s.c,
                s.part_windows(),
                s.off,
                s.sets,
                s.stride as u32,
                cursor.as_mut_ptr(),
                entries.as_mut_ptr(),
            )
        };
        Ok(())
    }
    fn accumulate_points(
        &mut self,
        entries: &Vec<u32>,
        ends: &Vec<u32>,
        buckets_len: u64,
        (total, slice): (u64, u32),
        buckets: &mut Vec<u32>,
        next: &mut (Vec<u32>, Vec<u32>),
    ) -> Result<()> {
        unsafe {
            (self.steps.accumulate_points)(
                self.bases.as_ptr(),
                entries.as_ptr(),
                ends.as_ptr(),
                buckets_len as u32,
                total,
                slice,
                buckets.as_mut_ptr(),
                next.0.as_mut_ptr(),
                next.1.as_mut_ptr(),
            )
        };
        Ok(())
    }
    fn accumulate_partials(
        &mut self,
        from: &(Vec<u32>, Vec<u32>),
        (total, slice): (u64, u32),
        buckets: &mut Vec<u32>,
        next: &mut (Vec<u32>, Vec<u32>),
    ) -> Result<()> {
        unsafe {
            (self.steps.accumulate_partials)(
                from.1.as_ptr(),
                from.0.as_ptr(),
                total,
                slice,
                buckets.as_mut_ptr(),
                next.0.as_mut_ptr(),
                next.1.as_mut_ptr(),
            )
        };
        Ok(())
    }
    fn add_buckets(&mut self, acc: &mut Vec<u32>, more: &Vec<u32>, count: u64) -> Result<()> {
        unsafe { (self.steps.add_buckets)(acc.as_mut_ptr(), more.as_ptr(), count) };
        Ok(())
    }
    fn window_segments(&mut self, buckets: &Vec<u32>, s: &Shape, out: &mut Vec<u32>) -> Result<()> {
        unsafe {
            (self.steps.window_segments)(
                buckets.as_ptr(),
                s.buckets_per_window(),
                s.sets,
                s.segment(),
                out.as_mut_ptr(),
            )
        };
        Ok(())
    }
    fn sum_groups(
        &mut self,
        input: &Vec<u32>,
        groups: u64,
        m: u32,
        out: &mut Vec<u32>,
    ) -> Result<()> {
        unsafe { (self.steps.sum_groups)(input.as_ptr(), groups, m, out.as_mut_ptr()) };
        Ok(())
    }
    fn read_points(&mut self, p: &Vec<u32>, len: usize) -> Result<Vec<u32>> {
        Ok(p[..len * self.point_words].to_vec())
    }
}

/// `sum scalars[i] * bases[i]` on group `P` through its kernel code, with a given window size
/// (`None`: the one the GPU path would pick) and `copies` precomputed copies of the bases (1:
/// none), computed by the kernel code too.
pub fn msm<'s, P: crate::msm::Group>(
    bases: &[crate::msm::Affine<P>],
    scalars: impl Into<crate::msm::Scalars<'s, P::ScalarField>>,
    window: Option<u32>,
    copies: u32,
) -> Result<crate::msm::Projective<P>> {
    Ok(msm_many(&[bases], scalars, window, copies, None, 1)?.remove(0))
}

/// [`msm`] of the same scalars over each set of `bases` (of one length), sorted once for all;
/// the scalars taken in chunks growing from `chunk` (`None`: all at once) as a large MSM's cross
/// to the GPU; the cells cut into `parts` equal parts, summed on their own and added, as an MSM
/// split over that many GPUs. Canonical scalars are staged as for the GPU: checked, then read
/// by the kernels as they are.
pub fn msm_many<'s, P: crate::msm::Group>(
    bases: &[&[crate::msm::Affine<P>]],
    scalars: impl Into<crate::msm::Scalars<'s, P::ScalarField>>,
    window: Option<u32>,
    copies: u32,
    chunk: Option<usize>,
    parts: usize,
) -> Result<Vec<crate::msm::Projective<P>>> {
    use crate::msm::{combine_windows, point_words, raw_bases, scalar_bits, SCALAR_WORDS};
    let scalars = scalars.into();
    let len = bases.first().map_or(0, |b| b.len());
    if bases.iter().any(|b| b.len() != len) {
        return Err(crate::error::Error::invalid(
            "sets of bases of several lengths",
        ));
    }
    let (n, bits) = (scalars.len(), scalar_bits::<P>());
    let s = match window {
        Some(c) => Shape::precomputed(n, bits, c, copies, len)?,
        None => Shape::for_bases(n, len, copies, bits)?,
    };
    let raw: Vec<Vec<u32>> = bases.iter().map(|b| raw_bases(b)).collect();
    let raw: Vec<&[u32]> = raw.iter().map(Vec::as_slice).collect();
    let mut words = vec![0u32; SCALAR_WORDS * n];
    scalars.stage(0..n, &mut words)?;
    let mut total = vec![crate::msm::Projective::<P>::default(); bases.len()];
    for cut in Shape::cuts(s.windows, &vec![1.0; parts.max(1)]) {
        let Some(part) = s.part(cut) else { continue };
        let sums = window_sums(
            &P::emulated(),
            point_words::<P>(),
            &raw,
            &words,
            scalars.montgomery(),
            &part,
            chunk,
        )?;
        for (t, sums) in total.iter_mut().zip(&sums) {
            *t += combine_windows::<P>(sums, &part);
        }
    }
    Ok(total)
}
