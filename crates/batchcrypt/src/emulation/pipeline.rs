//! The pipeline's kernels run on the host.

extern "C" {
    fn gather_words(
        parts: *const *const [u32; 4],
        ends: *const u64,
        count: u32,
        out: *mut [u32; 4],
        n: u64,
    );
}

/// Joins `parts` (each a whole number of 16-byte words) as the GPU's gather kernel does.
pub fn gather(parts: &[&[[u32; 4]]]) -> Vec<[u32; 4]> {
    let starts: Vec<*const [u32; 4]> = parts.iter().map(|p| p.as_ptr()).collect();
    let ends: Vec<u64> = parts
        .iter()
        .scan(0u64, |at, p| {
            *at += p.len() as u64;
            Some(*at)
        })
        .collect();
    let n = ends.last().copied().unwrap_or(0);
    let mut out = vec![[0u32; 4]; n as usize];
    if n > 0 {
        // SAFETY: `parts.len()` starts and ends; the output holds every part's words.
        unsafe {
            gather_words(
                starts.as_ptr(),
                ends.as_ptr(),
                parts.len() as u32,
                out.as_mut_ptr(),
                n,
            )
        };
    }
    out
}
