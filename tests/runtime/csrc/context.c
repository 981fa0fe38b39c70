/* A host object that reaches the runtime only through context pointers filled by the loader. */
#include "tvm_c_abi.h"

/* Weak, as upstream's link-once globals: several objects of one library share it. */
__attribute__((weak)) void* __tvm_module_ctx = NULL;
__attribute__((weak)) void* __TVMAPISetLastError = NULL;
__attribute__((weak)) void* __TVMFuncCall = NULL;
__attribute__((weak)) void* __TVMBackendGetFuncFromEnv = NULL;

typedef void (*SetErrorFn)(const char*);
typedef int (*GetFuncFn)(void*, const char*, TVMFunctionHandle*);
typedef int (*CallFn)(TVMFunctionHandle, TVMValue*, int*, int, TVMValue*, int*);

/* ctx_call(name, x) -> global function name applied to x. */
int ctx_call(TVMValue* args, int* codes, int n, TVMValue* ret, int* ret_code, void* h) {
  (void)h;
  if (n != 2 || codes[0] != kTVMStr) {
    ((SetErrorFn)__TVMAPISetLastError)("ctx_call: expects a name and a value");
    return -1;
  }
  TVMFunctionHandle f = NULL;
  if (((GetFuncFn)__TVMBackendGetFuncFromEnv)(__tvm_module_ctx, args[0].v_str, &f) != 0) return -1;
  return ((CallFn)__TVMFuncCall)(f, args + 1, codes + 1, 1, ret, ret_code);
}
