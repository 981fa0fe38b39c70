/* Packed functions for the runtime tests: argument and return conversion, callbacks, errors. */
#include <stdio.h>
#include <string.h>

#include "tvm_c_abi.h"

/* Weak, as upstream's link-once globals: several objects of one library share it. */
__attribute__((weak)) void* __tvm_module_ctx = NULL;
const char __tvm_main__[] = "add_int";

static int fail(const char* msg) {
  TVMAPISetLastError(msg);
  return -1;
}

/* add_int(a, b) -> a + b */
int add_int(TVMValue* args, int* codes, int n, TVMValue* ret, int* ret_code, void* h) {
  (void)h;
  if (n != 2 || codes[0] != kTVMArgInt || codes[1] != kTVMArgInt)
    return fail("add_int: expects 2 int arguments");
  ret->v_int64 = args[0].v_int64 + args[1].v_int64;
  *ret_code = kTVMArgInt;
  return 0;
}

/* echo(x) -> x, whatever its type (strings are copied by the caller before the next call). */
int echo(TVMValue* args, int* codes, int n, TVMValue* ret, int* ret_code, void* h) {
  (void)h;
  if (n != 1) return fail("echo: expects 1 argument");
  *ret = args[0];
  *ret_code = codes[0];
  return 0;
}

/* type_code(x) -> the type code the caller used for x. */
int type_code(TVMValue* args, int* codes, int n, TVMValue* ret, int* ret_code, void* h) {
  (void)h;
  (void)args;
  if (n != 1) return fail("type_code: expects 1 argument");
  ret->v_int64 = codes[0];
  *ret_code = kTVMArgInt;
  return 0;
}

/* describe(x) -> a string describing a DLTensor: "ndim=2 shape=3x4 code=0 bits=32 dev=1:0". */
static char describe_buf[256];
int describe(TVMValue* args, int* codes, int n, TVMValue* ret, int* ret_code, void* h) {
  (void)h;
  if (n != 1 || codes[0] != kTVMDLTensorHandle) return fail("describe: expects 1 tensor");
  DLTensor* t = (DLTensor*)args[0].v_handle;
  int pos = snprintf(describe_buf, sizeof describe_buf, "ndim=%d shape=", t->ndim);
  for (int i = 0; i < t->ndim; ++i)
    pos += snprintf(describe_buf + pos, sizeof describe_buf - pos, "%s%lld", i ? "x" : "",
                    (long long)t->shape[i]);
  snprintf(describe_buf + pos, sizeof describe_buf - pos, " code=%d bits=%d lanes=%d dev=%d:%d strides=%s off=%llu",
           t->dtype.code, t->dtype.bits, t->dtype.lanes, t->device.device_type, t->device.device_id,
           t->strides ? "set" : "null", (unsigned long long)t->byte_offset);
  ret->v_str = describe_buf;
  *ret_code = kTVMStr;
  return 0;
}

/* sum_i32(t) -> sum of the int32 elements of a compact tensor. */
int sum_i32(TVMValue* args, int* codes, int n, TVMValue* ret, int* ret_code, void* h) {
  (void)h;
  if (n != 1 || codes[0] != kTVMDLTensorHandle) return fail("sum_i32: expects 1 tensor");
  DLTensor* t = (DLTensor*)args[0].v_handle;
  if (t->dtype.code != kDLInt || t->dtype.bits != 32) return fail("sum_i32: tensor must be int32");
  int64_t count = 1;
  for (int i = 0; i < t->ndim; ++i) count *= t->shape[i];
  const int32_t* data = (const int32_t*)((const char*)t->data + t->byte_offset);
  int64_t total = 0;
  for (int64_t i = 0; i < count; ++i) total += data[i];
  ret->v_int64 = total;
  *ret_code = kTVMArgInt;
  return 0;
}

/* scale_i8(t, k): t[i] = (int8)(t[i] * k) in place. */
int scale_i8(TVMValue* args, int* codes, int n, TVMValue* ret, int* ret_code, void* h) {
  (void)h;
  (void)ret;
  (void)ret_code;
  if (n != 2 || codes[0] != kTVMDLTensorHandle || codes[1] != kTVMArgInt)
    return fail("scale_i8: expects a tensor and an int");
  DLTensor* t = (DLTensor*)args[0].v_handle;
  int64_t count = 1;
  for (int i = 0; i < t->ndim; ++i) count *= t->shape[i];
  int8_t* data = (int8_t*)t->data;
  for (int64_t i = 0; i < count; ++i) data[i] = (int8_t)(data[i] * args[1].v_int64);
  return 0;
}

/* call_back(f, ...) -> f(...) through TVMFuncCall. */
int call_back(TVMValue* args, int* codes, int n, TVMValue* ret, int* ret_code, void* h) {
  (void)h;
  if (n < 1 || codes[0] != kTVMPackedFuncHandle) return fail("call_back: first argument must be a function");
  if (TVMFuncCall(args[0].v_handle, args + 1, codes + 1, n - 1, ret, ret_code) != 0) return -1;
  return 0;
}

/* call_env(name, ...) -> the function found by TVMBackendGetFuncFromEnv, called with the rest. */
int call_env(TVMValue* args, int* codes, int n, TVMValue* ret, int* ret_code, void* h) {
  (void)h;
  if (n < 1 || codes[0] != kTVMStr) return fail("call_env: first argument must be a name");
  TVMFunctionHandle f = NULL;
  if (TVMBackendGetFuncFromEnv(__tvm_module_ctx, args[0].v_str, &f) != 0) return -1;
  return TVMFuncCall(f, args + 1, codes + 1, n - 1, ret, ret_code);
}

/* call_handle(h) -> calls a raw handle value given as an int (to test bad handles). */
int call_handle(TVMValue* args, int* codes, int n, TVMValue* ret, int* ret_code, void* h) {
  (void)h;
  if (n != 1 || codes[0] != kTVMArgInt) return fail("call_handle: expects an int");
  return TVMFuncCall((TVMFunctionHandle)(intptr_t)args[0].v_int64, NULL, NULL, 0, ret, ret_code);
}

/* always_fails() -> error with a known message. */
int always_fails(TVMValue* args, int* codes, int n, TVMValue* ret, int* ret_code, void* h) {
  (void)args;
  (void)codes;
  (void)n;
  (void)ret;
  (void)ret_code;
  (void)h;
  return fail("always_fails: deliberate failure 42");
}
