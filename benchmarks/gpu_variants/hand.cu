// Hand-written reference points for benchmarks/gpu_variants/run.py: what the generated
// row kernels would reach with the row in registers (no shared copy) and 16-byte
// accesses, and the block reductions with several independent accumulators.
#define ROWS 8192
#define COLS 4096
#define T 256

struct Max { __device__ float operator()(float a, float b) const { return fmaxf(a, b); } };
struct Sum { __device__ float operator()(float a, float b) const { return a + b; } };

// every thread gets the block's result; `red` holds T/32 floats
template <class Op> __device__ __forceinline__ float block_reduce(float v, float* red, Op op) {
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
  __syncthreads();
  float r = red[0];
  #pragma unroll
  for (int w = 1; w < T / 32; ++w) r = op(r, red[w]);
  return r;
}

extern "C" __global__ void __launch_bounds__(T) softmax_regs_vec4(const float* __restrict__ x, float* __restrict__ y) {
  __shared__ float red0[T / 32], red1[T / 32];
  const float4* xr = reinterpret_cast<const float4*>(x + (size_t)blockIdx.x * COLS);
  float4* yr = reinterpret_cast<float4*>(y + (size_t)blockIdx.x * COLS);
  float4 v[COLS / 4 / T];
  #pragma unroll
  for (int c = 0; c < COLS / 4 / T; ++c) v[c] = xr[c * T + threadIdx.x];
  float m = __int_as_float(0xff800000);
  #pragma unroll
  for (int c = 0; c < COLS / 4 / T; ++c) m = fmaxf(m, fmaxf(fmaxf(v[c].x, v[c].y), fmaxf(v[c].z, v[c].w)));
  m = block_reduce(m, red0, Max());
  float s = 0.f;
  #pragma unroll
  for (int c = 0; c < COLS / 4 / T; ++c) {
    v[c].x = expf(v[c].x - m); v[c].y = expf(v[c].y - m); v[c].z = expf(v[c].z - m); v[c].w = expf(v[c].w - m);
    s += (v[c].x + v[c].y) + (v[c].z + v[c].w);
  }
  const float r = 1.f / block_reduce(s, red1, Sum());
  #pragma unroll
  for (int c = 0; c < COLS / 4 / T; ++c) yr[c * T + threadIdx.x] = make_float4(v[c].x * r, v[c].y * r, v[c].z * r, v[c].w * r);
}

extern "C" __global__ void __launch_bounds__(T) softmax_regs_scalar(const float* __restrict__ x, float* __restrict__ y) {
  __shared__ float red0[T / 32], red1[T / 32];
  const float* xr = x + (size_t)blockIdx.x * COLS;
  float* yr = y + (size_t)blockIdx.x * COLS;
  float v[COLS / T];
  #pragma unroll
  for (int c = 0; c < COLS / T; ++c) v[c] = xr[c * T + threadIdx.x];
  float m = __int_as_float(0xff800000);
  #pragma unroll
  for (int c = 0; c < COLS / T; ++c) m = fmaxf(m, v[c]);
  m = block_reduce(m, red0, Max());
  float s = 0.f;
  #pragma unroll
  for (int c = 0; c < COLS / T; ++c) { v[c] = expf(v[c] - m); s += v[c]; }
  const float r = 1.f / block_reduce(s, red1, Sum());
  #pragma unroll
  for (int c = 0; c < COLS / T; ++c) yr[c * T + threadIdx.x] = v[c] * r;
}

// the generated structure (three strided passes over a shared copy), but the copy and
// the output with 16-byte accesses
extern "C" __global__ void __launch_bounds__(T) softmax_shared_vec4(const float* __restrict__ x, float* __restrict__ y) {
  __shared__ __align__(16) float row[COLS];
  __shared__ float red0[T / 32], red1[T / 32];
  const float4* xr = reinterpret_cast<const float4*>(x + (size_t)blockIdx.x * COLS);
  float4* yr = reinterpret_cast<float4*>(y + (size_t)blockIdx.x * COLS);
  float4* rowv = reinterpret_cast<float4*>(row);
  #pragma unroll
  for (int c = 0; c < COLS / 4 / T; ++c) rowv[c * T + threadIdx.x] = xr[c * T + threadIdx.x];
  __syncthreads();
  float m = __int_as_float(0xff800000);
  for (int k = threadIdx.x; k < COLS; k += T) m = fmaxf(m, row[k]);
  m = block_reduce(m, red0, Max());
  float s = 0.f;
  for (int k = threadIdx.x; k < COLS; k += T) s += expf(row[k] - m);
  const float r = 1.f / block_reduce(s, red1, Sum());
  #pragma unroll
  for (int c = 0; c < COLS / 4 / T; ++c) {
    float4 e = rowv[c * T + threadIdx.x];
    yr[c * T + threadIdx.x] = make_float4(expf(e.x - m) * r, expf(e.y - m) * r, expf(e.z - m) * r, expf(e.w - m) * r);
  }
}

// sum(|x|) over rows of 8192 (the first of the generated two kernels), 4 accumulators
extern "C" __global__ void __launch_bounds__(T) sum_abs_acc4(const float* __restrict__ x, float* __restrict__ out) {
  __shared__ float red[T / 32];
  const float* xr = x + (size_t)blockIdx.x * 8192;
  float a0 = 0.f, a1 = 0.f, a2 = 0.f, a3 = 0.f;
  for (int k = threadIdx.x; k < 8192; k += 4 * T) {
    a0 += fabsf(xr[k]); a1 += fabsf(xr[k + T]); a2 += fabsf(xr[k + 2 * T]); a3 += fabsf(xr[k + 3 * T]);
  }
  const float s = block_reduce((a0 + a1) + (a2 + a3), red, Sum());
  if (threadIdx.x == 0) out[blockIdx.x] = s;
}

extern "C" __global__ void __launch_bounds__(T) sum_abs_vec4(const float* __restrict__ x, float* __restrict__ out) {
  __shared__ float red[T / 32];
  const float4* xr = reinterpret_cast<const float4*>(x + (size_t)blockIdx.x * 8192);
  float a0 = 0.f, a1 = 0.f;
  #pragma unroll
  for (int c = 0; c < 8192 / 4 / T; c += 2) {
    float4 p = xr[c * T + threadIdx.x], q = xr[(c + 1) * T + threadIdx.x];
    a0 += (fabsf(p.x) + fabsf(p.y)) + (fabsf(p.z) + fabsf(p.w));
    a1 += (fabsf(q.x) + fabsf(q.y)) + (fabsf(q.z) + fabsf(q.w));
  }
  const float s = block_reduce(a0 + a1, red, Sum());
  if (threadIdx.x == 0) out[blockIdx.x] = s;
}
