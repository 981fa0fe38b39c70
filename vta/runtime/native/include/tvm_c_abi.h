/*
 * The classic TVM C ABI, as far as VTA host code and this project's runtime use it.
 *
 * Host objects produced by vta.build, and kernels written by hand, include this header. The
 * layouts follow DLPack and TVM's c_runtime_api.h (reference tvm-vta-software.md 5.2) so that
 * objects built against either run unchanged.
 */
#ifndef VTA_TVM_C_ABI_H_
#define VTA_TVM_C_ABI_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- DLPack ------------------------------------------------------------------------------ */
typedef enum {
  kDLCPU = 1,
  kDLExtDev = 12,
} DLDeviceType;

typedef struct {
  int32_t device_type; /* DLDeviceType */
  int32_t device_id;
} DLDevice;

typedef enum {
  kDLInt = 0,
  kDLUInt = 1,
  kDLFloat = 2,
} DLDataTypeCode;

typedef struct {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} DLDataType;

typedef struct {
  void* data; /* for ext_dev: a host pointer into the shared DRAM arena */
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides; /* NULL means compact row-major */
  uint64_t byte_offset;
} DLTensor;

/* ---- packed calling convention ------------------------------------------------------------ */
typedef union {
  int64_t v_int64;
  double v_float64;
  void* v_handle;
  const char* v_str;
  DLDataType v_type;
  DLDevice v_device;
} TVMValue;

typedef enum {
  kTVMArgInt = 0,
  kTVMArgUInt = 1,
  kTVMArgFloat = 2,
  kTVMOpaqueHandle = 3,
  kTVMNullptr = 4,
  kTVMDataType = 5,
  kDLDevice = 6,
  kTVMDLTensorHandle = 7,
  kTVMObjectHandle = 8,
  kTVMModuleHandle = 9,
  kTVMPackedFuncHandle = 10,
  kTVMStr = 11,
  kTVMBytes = 12,
  kTVMNDArrayHandle = 13,
} TVMArgTypeCode;

typedef void* TVMFunctionHandle;

/* Signature of every packed function a host object exports. Returns 0, or -1 after setting the
 * last error with TVMAPISetLastError. */
typedef int (*TVMBackendPackedCFunc)(TVMValue* args, int* type_codes, int num_args,
                                     TVMValue* out_ret_value, int* out_ret_tcode,
                                     void* resource_handle);

/* Record the message of the error the current call is about to report. */
void TVMAPISetLastError(const char* msg);
/* The message recorded by the last failing call in this thread. */
const char* TVMGetLastError(void);
/* Find a function by name: the module's imports first, then the global registry. */
int TVMBackendGetFuncFromEnv(void* mod_node, const char* func_name, TVMFunctionHandle* out);
/* Call a function handle obtained above. */
int TVMFuncCall(TVMFunctionHandle func, TVMValue* arg_values, int* type_codes, int num_args,
                TVMValue* ret_val, int* ret_type_code);

#ifdef __cplusplus
}
#endif

#endif /* VTA_TVM_C_ABI_H_ */
