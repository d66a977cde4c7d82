module leaky

go 1.26
