//! A stand-in for `libfuzzer-sys` with the one item the fuzz targets use, `fuzz_target!`, so
//! that `cargo check` on the stable toolchain type-checks every target body against the
//! current library API (`.ci/run` does this; fuzzing itself needs `cargo +nightly fuzz`).

/// Expands to the libFuzzer entry point calling the target body, as the real macro does, so
/// the body is type-checked exactly as it is when fuzzing.
#[macro_export]
macro_rules! fuzz_target {
    (|$data:ident: &[u8]| $body:block) => {
        /// # Safety
        /// `data` points to `size` readable bytes (the libFuzzer contract).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn LLVMFuzzerTestOneInput(data: *const u8, size: usize) -> i32 {
            fn rust_fuzzer_test_input($data: &[u8]) $body
            rust_fuzzer_test_input(unsafe { ::core::slice::from_raw_parts(data, size) });
            0
        }
    };
}
