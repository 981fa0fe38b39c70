/*
 * The TVM C ABI functions that host objects call (reference tvm-vta-software.md 5.2, 5.6).
 *
 * The error message is kept per thread. Function lookup (TVMBackendGetFuncFromEnv) and calls
 * (TVMFuncCall) are served by the Python runtime: it installs two callbacks with
 * VTART_SetCallbacks right after loading this library, and function handles are opaque ids of
 * Python objects. Workspace and parallel-launch entry points are provided for host code that
 * uses them: workspaces come from the C heap, parallel lambdas run serially as one task.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>
#include <string.h>

#include "tvm_c_abi.h"

/* ---- last error -------------------------------------------------------------------------- */

static _Thread_local char* last_error = NULL;
static _Thread_local size_t last_error_capacity = 0;

void TVMAPISetLastError(const char* msg) {
  if (msg == NULL) msg = "(null error message)";
  size_t need = strlen(msg) + 1;
  if (need > last_error_capacity) {
    size_t cap = need < 256 ? 256 : need;
    char* grown = (char*)realloc(last_error, cap);
    if (grown == NULL) {
      /* Keep whatever fits in the old buffer rather than losing the message entirely. */
      if (last_error_capacity == 0) return;
      need = last_error_capacity;
    } else {
      last_error = grown;
      last_error_capacity = cap;
    }
  }
  memcpy(last_error, msg, need - 1);
  last_error[need - 1] = '\0';
}

const char* TVMGetLastError(void) { return last_error != NULL ? last_error : ""; }

/* ---- callbacks into Python ----------------------------------------------------------------- */

typedef int (*VTARTGetFuncFromEnvFn)(void* mod_node, const char* func_name,
                                    TVMFunctionHandle* out);
typedef int (*VTARTFuncCallFn)(TVMFunctionHandle func, TVMValue* arg_values, int* type_codes,
                              int num_args, TVMValue* ret_val, int* ret_type_code);

static VTARTGetFuncFromEnvFn python_get_func = NULL;
static VTARTFuncCallFn python_func_call = NULL;

/* Installed by vta.runtime.native_lib once the library is loaded. */
void VTART_SetCallbacks(VTARTGetFuncFromEnvFn get_func, VTARTFuncCallFn func_call) {
  python_get_func = get_func;
  python_func_call = func_call;
}

int TVMBackendGetFuncFromEnv(void* mod_node, const char* func_name, TVMFunctionHandle* out) {
  if (func_name == NULL || out == NULL) {
    TVMAPISetLastError("TVMBackendGetFuncFromEnv: func_name and out must not be NULL");
    return -1;
  }
  *out = NULL;
  if (python_get_func == NULL) {
    TVMAPISetLastError("TVMBackendGetFuncFromEnv: the Python runtime has not installed its callbacks");
    return -1;
  }
  return python_get_func(mod_node, func_name, out);
}

int TVMFuncCall(TVMFunctionHandle func, TVMValue* arg_values, int* type_codes, int num_args,
                TVMValue* ret_val, int* ret_type_code) {
  if (func == NULL) {
    TVMAPISetLastError("TVMFuncCall: the function handle is NULL");
    return -1;
  }
  if (num_args < 0 || (num_args > 0 && (arg_values == NULL || type_codes == NULL))) {
    TVMAPISetLastError("TVMFuncCall: arguments must be non-NULL arrays of num_args >= 0 entries");
    return -1;
  }
  if (python_func_call == NULL) {
    TVMAPISetLastError("TVMFuncCall: the Python runtime has not installed its callbacks");
    return -1;
  }
  /* The callee may ignore the return slots; give them a well-defined "no value". */
  TVMValue ignored_value;
  int ignored_code;
  if (ret_val == NULL) ret_val = &ignored_value;
  if (ret_type_code == NULL) ret_type_code = &ignored_code;
  ret_val->v_int64 = 0;
  *ret_type_code = kTVMNullptr;
  return python_func_call(func, arg_values, type_codes, num_args, ret_val, ret_type_code);
}

/* ---- workspaces and parallel launch (serial) ------------------------------------------------ */

void* TVMBackendAllocWorkspace(int device_type, int device_id, uint64_t nbytes,
                               int dtype_code_hint, int dtype_bits_hint) {
  (void)device_id;
  (void)dtype_code_hint;
  (void)dtype_bits_hint;
  if (device_type != kDLCPU) {
    TVMAPISetLastError("TVMBackendAllocWorkspace: only CPU (device type 1) workspaces are supported");
    return NULL;
  }
  size_t size = (size_t)((nbytes + 63u) & ~(uint64_t)63u);
  if (size == 0) size = 64;
  void* ptr = NULL;
  if (posix_memalign(&ptr, 64, size) != 0) {
    TVMAPISetLastError("TVMBackendAllocWorkspace: out of host memory");
    return NULL;
  }
  return ptr;
}

int TVMBackendFreeWorkspace(int device_type, int device_id, void* ptr) {
  (void)device_type;
  (void)device_id;
  free(ptr);
  return 0;
}

typedef struct {
  void* sync_handle;
  int32_t num_task;
} VTARTParallelGroupEnv;

typedef int (*VTARTParallelLambda)(int task_id, VTARTParallelGroupEnv* penv, void* cdata);

int TVMBackendParallelLaunch(VTARTParallelLambda flambda, void* cdata, int num_task) {
  (void)num_task;
  if (flambda == NULL) {
    TVMAPISetLastError("TVMBackendParallelLaunch: the task function is NULL");
    return -1;
  }
  VTARTParallelGroupEnv env = {NULL, 1};
  return flambda(0, &env, cdata);
}

int TVMBackendParallelBarrier(int task_id, VTARTParallelGroupEnv* penv) {
  (void)task_id;
  (void)penv;
  return 0;
}
