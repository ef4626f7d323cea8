package spec

// matmulBF16TFLOPS is, per catalog device, the best dense BF16 torch.mm
// rate measured on square matrices of 1,024-10,240 (six warm-up and thirty
// timed calls each, the best size kept) in one public data set:
// zzc0721/torch-performance-test-data, database.md (read 2026-12-04; rows
// contributed 2025-2026, PyTorch 2.8.0 unless noted). LookupDevice fills
// Device.MatmulBF16TFLOPS from it; the roofline package scales its compute
// roofs by it (roofline/matmulrate.go).
var matmulBF16TFLOPS = map[string]float64{
	// "NVIDIA H100 80GB HBM3": 789.24 (Docker, PyTorch 2.8.0, CUDA 12.6)
	// and 783.66 (bare metal): their mean. The reference of the
	// Hopper-fitted roofs (Hopper, and Ada and Blackwell, which borrow
	// them: roofline/curves.go).
	"h100": (789.24 + 783.66) / 2,
	"h200": 790.29, // "NVIDIA H200", Docker
	"h20":  141.86, // "NVIDIA H20 96GB", Docker, PyTorch 2.8.0, CUDA 12.8
	// "NVIDIA A800 SXM4 80GB", Docker, PyTorch 2.8.0: the reference of
	// the Ampere roofs (fitted on Frontier's A800 profiles).
	"a800": 266.48,
	"a100": 264.53, // "NVIDIA A100 SXM4 80GB", Docker, PyTorch 2.8.0
	"l40s": 269.15, // "NVIDIA L40S", Docker
	// "NVIDIA GeForce RTX 4090D 24GB", a cloud instance, PyTorch 2.8.0
	// (two 48 GB rows of the same chip: 151.09, 145.77).
	"rtx4090d": 148.91,
	// "NVIDIA GeForce RTX 4090 24GB", the same cloud and PyTorch 2.8.0 as
	// the 4090 D's row (other 24 GB rows: 170.06, 173.31 on bare metal
	// with PyTorch 2.4, 162.39 in Docker).
	"rtx4090": 163.09,
	// "NVIDIA RTX PRO 6000 Blackwell Server Edition", Docker (the same
	// card's issues #161-162, PyTorch 2.7.0: 417.34 at 8,192).
	"rtxpro6000": 409.42,
	"b200":       1696.03, // "NVIDIA B200 180GB", GCP a4-highgpu-8g, PyTorch 2.8.0
}
