/* Packed functions for the RPC tests: tensors and scalars in, a scalar out. */
#include <stdint.h>

#include "tvm_c_abi.h"

void* __tvm_module_ctx = NULL;
const char __tvm_main__[] = "axpy";

static int fail(const char* msg) {
  TVMAPISetLastError(msg);
  return -1;
}

static int64_t count_int32(const DLTensor* t) {
  if (t->dtype.code != kDLInt || t->dtype.bits != 32 || t->dtype.lanes != 1) return -1;
  int64_t n = 1;
  for (int i = 0; i < t->ndim; ++i) n *= t->shape[i];
  return n;
}

/* axpy(x, y, a): y[i] += a * x[i] over two int32 tensors of one size; returns the size. */
int axpy(TVMValue* args, int* codes, int n, TVMValue* ret, int* ret_code, void* h) {
  (void)h;
  if (n != 3 || codes[0] != kTVMDLTensorHandle || codes[1] != kTVMDLTensorHandle || codes[2] != kTVMArgInt)
    return fail("axpy: expects (int32 tensor x, int32 tensor y, int a)");
  const DLTensor* x = (const DLTensor*)args[0].v_handle;
  DLTensor* y = (DLTensor*)args[1].v_handle;
  int64_t nx = count_int32(x), ny = count_int32(y);
  if (nx < 0 || nx != ny) return fail("axpy: x and y must be int32 tensors of the same size");
  const int32_t* xs = (const int32_t*)((const char*)x->data + x->byte_offset);
  int32_t* ys = (int32_t*)((char*)y->data + y->byte_offset);
  int32_t a = (int32_t)args[2].v_int64;
  for (int64_t i = 0; i < nx; ++i) ys[i] += a * xs[i];
  ret->v_int64 = nx;
  *ret_code = kTVMArgInt;
  return 0;
}
