#pragma once
// The slice of NVML's C ABI that nvml_library.cpp uses, declared here because nvml.h is not part
// of every toolkit installation (Debian's, for one). Layouts and values are those of nvml.h;
// where the real header is available they are checked against it below. C enums are passed as
// int. Only nvml_library.cpp includes this file.
#include <cstddef>

#if __has_include(<nvml.h>)
#include <nvml.h>  // only to check the declarations below against the real ones
#define PREFLIGHT_CHECK_NVML_ABI 1
#endif

namespace preflight {

namespace nvml_abi {
using Return = int;
constexpr Return kSuccess = 0;
constexpr Return kErrorInvalidArgument = 2;
constexpr Return kErrorNotSupported = 3;
constexpr Return kErrorInsufficientSize = 7;

using EnableState = int;  // nvmlEnableState_t
constexpr EnableState kFeatureEnabled = 1;
constexpr unsigned kDeviceMigEnable = 1;
constexpr int kMemoryErrorTypeCorrected = 0;  // nvmlMemoryErrorType_t
constexpr int kMemoryErrorTypeUncorrected = 1;
constexpr int kVolatileEcc = 0;  // nvmlEccCounterType_t
constexpr int kAggregateEcc = 1;
constexpr int kTemperatureGpu = 0;  // nvmlTemperatureSensors_t
constexpr int kClockSm = 1;         // nvmlClockType_t
constexpr unsigned kNvLinkMaxLinks = 18;
using NvLinkDeviceType = int;  // nvmlIntNvLinkDeviceType_t
constexpr NvLinkDeviceType kNvLinkDeviceTypeGpu = 0x00;
constexpr NvLinkDeviceType kNvLinkDeviceTypeIbmNpu = 0x01;
constexpr NvLinkDeviceType kNvLinkDeviceTypeSwitch = 0x02;
constexpr NvLinkDeviceType kNvLinkDeviceTypeUnknown = 0xFF;
constexpr unsigned long long kValueNotAvailable = ~0ULL;
// nvmlDeviceGetFieldValues: the field asked for, and how its value is typed (nvmlValueType_t).
constexpr unsigned kFiDevGetGpuRecoveryAction = 230;  // NVML_FI_DEV_GET_GPU_RECOVERY_ACTION
constexpr int kValueTypeUnsignedInt = 1;
constexpr int kValueTypeUnsignedLong = 2;
constexpr int kValueTypeUnsignedLongLong = 3;
constexpr int kValueTypeSignedLongLong = 4;
constexpr int kValueTypeSignedInt = 5;
constexpr int kValueTypeUnsignedShort = 6;

struct PciInfo {  // nvmlPciInfo_t (as filled by nvmlDeviceGetPciInfo_v3)
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;  // device id in the upper 16 bits, vendor id in the lower
  unsigned int pciSubSystemId;
  char busId[32];
};

struct Memory {  // nvmlMemory_t
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

struct ProcessInfo {  // nvmlProcessInfo_t, as used by the _v2 and _v3 process queries
  unsigned int pid;
  unsigned long long usedGpuMemory;  // bytes, or kValueNotAvailable
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};

struct FieldValue {  // nvmlFieldValue_t
  unsigned int fieldId;
  unsigned int scopeId;
  long long timestamp;
  long long latencyUsec;
  int valueType;      // nvmlValueType_t
  Return nvmlReturn;  // this field's own result
  union {             // nvmlValue_t
    double dVal;
    unsigned int uiVal;
    unsigned long ulVal;
    unsigned long long ullVal;
    long long sllVal;
    int siVal;
    unsigned short usVal;
  } value;
};
static_assert(sizeof(FieldValue) == 40, "nvmlFieldValue_t is 40 bytes on LP64");

using Device = nvmlDevice_st*;
using InitFn = Return (*)();
using ErrorStringFn = const char* (*)(Return);
using SystemStringFn = Return (*)(char*, unsigned);
using CountFn = Return (*)(unsigned*);
using HandleByIndexFn = Return (*)(unsigned, Device*);
using DeviceStringFn = Return (*)(Device, char*, unsigned);
using PciInfoFn = Return (*)(Device, PciInfo*);
using MemoryFn = Return (*)(Device, Memory*);
using MigModeFn = Return (*)(Device, unsigned*, unsigned*);
using EccModeFn = Return (*)(Device, EnableState*, EnableState*);
using EnableStateFn = Return (*)(Device, EnableState*);
using TotalEccErrorsFn = Return (*)(Device, int, int, unsigned long long*);
using RemappedRowsFn = Return (*)(Device, unsigned*, unsigned*, unsigned*, unsigned*);
using Uint64Fn = Return (*)(Device, unsigned long long*);
using TemperatureFn = Return (*)(Device, int, unsigned*);
using ClockInfoFn = Return (*)(Device, int, unsigned*);
using UintFn = Return (*)(Device, unsigned*);
using NvLinkStateFn = Return (*)(Device, unsigned, EnableState*);
// nvmlDeviceGetNvLinkErrorCounter(device, link, nvmlNvLinkErrorCounter_t, value): the counter
// enum is 0 replay, 1 recovery, 2 CRC flit, 3 CRC data (nvml.h).
using NvLinkErrorCounterFn = Return (*)(Device, unsigned, int, unsigned long long*);
using NvLinkRemotePciFn = Return (*)(Device, unsigned, PciInfo*);
using NvLinkRemoteTypeFn = Return (*)(Device, unsigned, NvLinkDeviceType*);
using ProcessesFn = Return (*)(Device, unsigned*, ProcessInfo*);
using FieldValuesFn = Return (*)(Device, int, FieldValue*);
}  // namespace nvml_abi

#ifdef PREFLIGHT_CHECK_NVML_ABI
static_assert(nvml_abi::kErrorInvalidArgument == NVML_ERROR_INVALID_ARGUMENT);
static_assert(nvml_abi::kErrorNotSupported == NVML_ERROR_NOT_SUPPORTED);
static_assert(nvml_abi::kErrorInsufficientSize == NVML_ERROR_INSUFFICIENT_SIZE);
static_assert(nvml_abi::kFeatureEnabled == NVML_FEATURE_ENABLED);
static_assert(nvml_abi::kDeviceMigEnable == NVML_DEVICE_MIG_ENABLE);
static_assert(nvml_abi::kMemoryErrorTypeCorrected == NVML_MEMORY_ERROR_TYPE_CORRECTED);
static_assert(nvml_abi::kMemoryErrorTypeUncorrected == NVML_MEMORY_ERROR_TYPE_UNCORRECTED);
static_assert(nvml_abi::kVolatileEcc == NVML_VOLATILE_ECC &&
              nvml_abi::kAggregateEcc == NVML_AGGREGATE_ECC);
static_assert(nvml_abi::kTemperatureGpu == NVML_TEMPERATURE_GPU);
static_assert(nvml_abi::kClockSm == NVML_CLOCK_SM);
static_assert(sizeof(nvmlClockType_t) == sizeof(int));
static_assert(nvml_abi::kNvLinkMaxLinks == NVML_NVLINK_MAX_LINKS);
// nvml.h defines it as a plain (signed) -1; the ABI value is the unsigned long long it stands for.
static_assert(nvml_abi::kValueNotAvailable ==
              static_cast<unsigned long long>(NVML_VALUE_NOT_AVAILABLE));
static_assert(nvml_abi::kNvLinkDeviceTypeGpu == NVML_NVLINK_DEVICE_TYPE_GPU);
static_assert(nvml_abi::kNvLinkDeviceTypeIbmNpu == NVML_NVLINK_DEVICE_TYPE_IBMNPU);
static_assert(nvml_abi::kNvLinkDeviceTypeSwitch == NVML_NVLINK_DEVICE_TYPE_SWITCH);
static_assert(nvml_abi::kNvLinkDeviceTypeUnknown == NVML_NVLINK_DEVICE_TYPE_UNKNOWN);
static_assert(sizeof(nvml_abi::NvLinkDeviceType) == sizeof(nvmlIntNvLinkDeviceType_t));
static_assert(sizeof(nvml_abi::EnableState) == sizeof(nvmlEnableState_t));
static_assert(sizeof(nvml_abi::PciInfo) == sizeof(nvmlPciInfo_t));
static_assert(offsetof(nvml_abi::PciInfo, pciDeviceId) == offsetof(nvmlPciInfo_t, pciDeviceId));
static_assert(offsetof(nvml_abi::PciInfo, busId) == offsetof(nvmlPciInfo_t, busId));
static_assert(sizeof(nvml_abi::Memory) == sizeof(nvmlMemory_t));
static_assert(sizeof(nvml_abi::ProcessInfo) == sizeof(nvmlProcessInfo_t));
static_assert(offsetof(nvml_abi::ProcessInfo, usedGpuMemory) ==
              offsetof(nvmlProcessInfo_t, usedGpuMemory));
static_assert(sizeof(nvml_abi::FieldValue) == sizeof(nvmlFieldValue_t));
static_assert(offsetof(nvml_abi::FieldValue, valueType) == offsetof(nvmlFieldValue_t, valueType));
static_assert(offsetof(nvml_abi::FieldValue, nvmlReturn) == offsetof(nvmlFieldValue_t, nvmlReturn));
static_assert(offsetof(nvml_abi::FieldValue, value) == offsetof(nvmlFieldValue_t, value));
static_assert(nvml_abi::kValueTypeUnsignedInt == NVML_VALUE_TYPE_UNSIGNED_INT);
static_assert(nvml_abi::kValueTypeSignedInt == NVML_VALUE_TYPE_SIGNED_INT);
#ifdef NVML_FI_DEV_GET_GPU_RECOVERY_ACTION  // nvml.h of R550 and newer (CUDA 12's lacks both)
static_assert(nvml_abi::kFiDevGetGpuRecoveryAction == NVML_FI_DEV_GET_GPU_RECOVERY_ACTION);
static_assert(nvml_abi::kValueTypeUnsignedShort == NVML_VALUE_TYPE_UNSIGNED_SHORT);
#endif
#endif

}  // namespace preflight
