module kubeboot.dev/go

go 1.22
