package main

import (
	"k8s.io/kubernetes/pkg/volume"
	"k8s.io/kubernetes/pkg/volume/configmap"
	"k8s.io/kubernetes/pkg/volume/downwardapi"
	"k8s.io/kubernetes/pkg/volume/emptydir"
	"k8s.io/kubernetes/pkg/volume/projected"
	"k8s.io/kubernetes/pkg/volume/secret"
)

// volumePlugins are the kubelet's plugins for the volumes the pods of
// nodeagent's runs carry: ConfigMap and projected volumes, and what they
// are built on (emptyDir) or may hold (secret, downward API).
func volumePlugins() []volume.VolumePlugin {
	var plugins []volume.VolumePlugin
	plugins = append(plugins, emptydir.ProbeVolumePlugins()...)
	plugins = append(plugins, configmap.ProbeVolumePlugins()...)
	plugins = append(plugins, projected.ProbeVolumePlugins()...)
	plugins = append(plugins, secret.ProbeVolumePlugins()...)
	plugins = append(plugins, downwardapi.ProbeVolumePlugins()...)
	return plugins
}
