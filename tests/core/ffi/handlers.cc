// Two small XLA FFI handlers the ember.ffi tests compile and call.
#include <cmath>
#include <cstdint>
#include <memory>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

// RMS normalisation over the last axis of an f32 array: y = x / sqrt(mean(x^2) + eps).
static ffi::Error RmsNormImpl(float eps, ffi::Buffer<ffi::F32> x,
                              ffi::ResultBuffer<ffi::F32> y) {
  auto dims = x.dimensions();
  if (dims.size() == 0) return ffi::Error::InvalidArgument("rms_norm: x must have an axis");
  const int64_t n = dims.back();
  const int64_t rows = n == 0 ? 0 : static_cast<int64_t>(x.element_count()) / n;
  const float* in = x.typed_data();
  float* out = y->typed_data();
  for (int64_t r = 0; r < rows; ++r) {
    float sum = 0.f;
    for (int64_t i = 0; i < n; ++i) sum += in[r * n + i] * in[r * n + i];
    const float scale = 1.f / std::sqrt(sum / n + eps);
    for (int64_t i = 0; i < n; ++i) out[r * n + i] = in[r * n + i] * scale;
  }
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(RmsNorm, RmsNormImpl,
                              ffi::Ffi::Bind()
                                  .Attr<float>("eps")
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>());

// Two results from an int64 attribute: x * offset, and the element count plus offset.
static ffi::Error ScaleCountImpl(int64_t offset, ffi::Buffer<ffi::F32> x,
                                 ffi::ResultBuffer<ffi::F32> y,
                                 ffi::ResultBuffer<ffi::S32> count) {
  const float* in = x.typed_data();
  float* out = y->typed_data();
  for (size_t i = 0; i < x.element_count(); ++i) out[i] = in[i] * static_cast<float>(offset);
  count->typed_data()[0] = static_cast<int32_t>(x.element_count() + offset);
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(ScaleCount, ScaleCountImpl,
                              ffi::Ffi::Bind()
                                  .Attr<int64_t>("offset")
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::S32>>());

// A stateful handler: XLA creates a Counter once per compiled program (the "instantiate"
// stage) and hands it to every run of the "execute" stage, which returns how many runs
// there have been. The state's type is registered from Python (register_ffi_type).
struct Counter {
  static ffi::TypeId id;
  int32_t calls = 0;
};
ffi::TypeId Counter::id = {};
static const ffi::TypeInfo kCounterTypeInfo = ffi::MakeTypeInfo<Counter>();

static ffi::ErrorOr<std::unique_ptr<Counter>> CounterInstantiateImpl() {
  return std::make_unique<Counter>();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(CounterInstantiate, CounterInstantiateImpl,
                              ffi::Ffi::BindInstantiate());

static ffi::Error CounterExecuteImpl(Counter* counter, ffi::ResultBuffer<ffi::S32> out) {
  out->typed_data()[0] = ++counter->calls;
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(CounterExecute, CounterExecuteImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::State<Counter>>()
                                  .Ret<ffi::Buffer<ffi::S32>>());

extern "C" void* CounterTypeId() { return &Counter::id; }
extern "C" const void* CounterTypeInfo() { return &kCounterTypeInfo; }
