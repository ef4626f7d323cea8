package roofline

// Kernels names the kernel vLLM runs for each op family whose price
// depends on which kernel it picks (by vLLM version, device and dtype), as
// AIConfigurator's kernel tables name it in their kernel_source column
// (for example "DeepGemmFp8BlockScaledMMKernel"). An empty field is the
// device model's default for the device: what ftk prices when the vLLM
// version is not given.
//
// The kernel-table scorer (cost.RooflineVsTable) sets a field from each
// row's kernel source, so a row is priced as the kernel that ran it; the
// simulator sets the fields from --vllm-version through KernelsFor, so a
// served step is priced as the kernels that version picks.
type Kernels struct{}

// KernelsFor returns the kernels vLLM version vllmVersion ("" : not
// given) picks on a device of architecture arch (spec.Device.Arch). Each
// rule cites the vLLM source that makes the choice.
func KernelsFor(arch, vllmVersion string) Kernels {
	return Kernels{}
}
