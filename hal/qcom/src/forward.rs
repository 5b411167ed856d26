//! The one mechanism behind every "a shared `X` is an `X`" impl of this crate's traits
//! ([`KgslIoctl`](crate::kgsl::ioctl::KgslIoctl), [`MsmIoctl`](crate::msm::MsmIoctl),
//! [`GpuKernel`](crate::kernel::GpuKernel) for `Arc<T>`): [`forward_to_deref!`] writes each
//! method, provided ones included, as a call of the same method on `**self`, so a wrapper can
//! never fall back to a trait default its inner implementation overrides.

/// Inside an `impl Trait for Arc<T>` (any `Deref` to an implementation): one forwarding method
/// per signature given, `fn name(&self, arg: Type, ..) -> Ret;` or `unsafe fn ..;` (an
/// `unsafe` one forwards the caller's contract unchanged).
macro_rules! forward_to_deref {
    () => {};
    (unsafe fn $name:ident(&self $(, $arg:ident: $ty:ty)* $(,)?) $(-> $ret:ty)?; $($rest:tt)*) => {
        unsafe fn $name(&self $(, $arg: $ty)*) $(-> $ret)? {
            // SAFETY: forwarded: the caller's contract is the inner implementation's.
            unsafe { (**self).$name($($arg),*) }
        }
        $crate::forward::forward_to_deref!($($rest)*);
    };
    (fn $name:ident(&self $(, $arg:ident: $ty:ty)* $(,)?) $(-> $ret:ty)?; $($rest:tt)*) => {
        fn $name(&self $(, $arg: $ty)*) $(-> $ret)? {
            (**self).$name($($arg),*)
        }
        $crate::forward::forward_to_deref!($($rest)*);
    };
}

pub(crate) use forward_to_deref;
