#!/usr/bin/env node
// Validates Kubernetes manifests against the API's schemas (kubernetes-models, which compiles
// the OpenAPI schemas of the Kubernetes release it names into validators: types, required
// fields, enumerations, quantities). Each argument is a kustomization's folder or a YAML file.
// A kustomization's resources are validated file by file (every file it lists must exist and
// hold only valid objects); with --kubectl PATH its `kubectl kustomize` output is validated too
// and must hold the same objects, each namespaced one in the kustomization's namespace.
// Unknown fields pass, as the schemas allow them. Exits 1 naming every invalid object.
// Usage: node validate_manifests.js [--kubectl PATH] DIR|FILE...
"use strict";
const fs = require("fs");
const path = require("path");
const childProcess = require("child_process");
const YAML = require("yaml");

const kustomizationFields = new Set(["apiVersion", "kind", "namespace", "resources", "images"]);
// Kinds kubectl kustomize leaves out of the namespace (the cluster-scoped ones we use).
const clusterScoped = new Set(["Namespace", "PriorityClass", "ClusterRole", "ClusterRoleBinding"]);

// The kubernetes-models class of an object, or an error saying why there is none.
function modelOf(object) {
  const { apiVersion, kind } = object;
  if (typeof apiVersion !== "string" || typeof kind !== "string") {
    throw new Error("no apiVersion or kind");
  }
  let group;
  try {
    group = require(`kubernetes-models/${apiVersion}`);
  } catch (error) {
    throw new Error(`unknown apiVersion ${apiVersion}`);
  }
  if (typeof group[kind] !== "function") throw new Error(`unknown kind ${kind} in ${apiVersion}`);
  return group[kind];
}

// The errors of one object (empty when valid); `where` names it in the messages.
function objectErrors(object, where) {
  if (object === null || typeof object !== "object" || Array.isArray(object)) {
    return [`${where}: not an object`];
  }
  const name = `${where}: ${object.kind}/${object.metadata && object.metadata.name}`;
  try {
    const Model = modelOf(object);
    if (!object.metadata || typeof object.metadata.name !== "string" || !object.metadata.name) {
      return [`${name}: metadata.name is missing`];
    }
    new Model(object).validate();
    return [];
  } catch (error) {
    return [`${name}: ${error.message}`];
  }
}

// The documents of a YAML stream, or an exception naming the file.
function parseDocuments(text, where) {
  const documents = YAML.parseAllDocuments(text);
  const objects = [];
  for (const document of documents) {
    if (document.errors.length) throw new Error(`${where}: ${document.errors[0].message}`);
    const object = document.toJS();
    if (object !== null) objects.push(object);
  }
  return objects;
}

// Validates a YAML file's objects; returns them and appends to `errors`.
function checkFile(file, errors) {
  let objects;
  try {
    objects = parseDocuments(fs.readFileSync(file, "utf8"), file);
  } catch (error) {
    errors.push(error.message);
    return [];
  }
  if (objects.length === 0) errors.push(`${file}: no object`);
  objects.forEach((object, i) => errors.push(...objectErrors(object, `${file} #${i + 1}`)));
  return objects;
}

// Validates a kustomization's own fields and every resource it lists (files and folders);
// returns the objects and appends to `errors`.
function checkKustomization(dir, errors) {
  const file = path.join(dir, "kustomization.yaml");
  let kustomization;
  try {
    [kustomization] = parseDocuments(fs.readFileSync(file, "utf8"), file);
  } catch (error) {
    errors.push(error.message);
    return [];
  }
  for (const field of Object.keys(kustomization || {})) {
    if (!kustomizationFields.has(field)) errors.push(`${file}: unexpected field ${field}`);
  }
  if (!Array.isArray(kustomization.resources) || kustomization.resources.length === 0) {
    errors.push(`${file}: no resources`);
    return [];
  }
  const objects = [];
  for (const resource of kustomization.resources) {
    const target = path.join(dir, resource);
    if (!fs.existsSync(target)) {
      errors.push(`${file}: resource ${resource} does not exist`);
    } else if (fs.statSync(target).isDirectory()) {
      objects.push(...checkKustomization(target, errors));
    } else {
      objects.push(...checkFile(target, errors));
    }
  }
  return objects;
}

// Validates `kubectl kustomize DIR`: every object valid, the same kinds and names as the
// resource files, the namespaced ones in the kustomization's namespace.
function checkRendered(kubectl, dir, sourceObjects, errors) {
  const rendered = childProcess.spawnSync(kubectl, ["kustomize", dir], { encoding: "utf8" });
  if (rendered.status !== 0) {
    errors.push(`${kubectl} kustomize ${dir}: ${rendered.stderr || rendered.error}`);
    return;
  }
  const where = `kubectl kustomize ${dir}`;
  const objects = parseDocuments(rendered.stdout, where);
  objects.forEach((object, i) => errors.push(...objectErrors(object, `${where} #${i + 1}`)));
  const key = (o) => `${o.kind}/${o.metadata && o.metadata.name}`;
  const expected = sourceObjects.map(key).sort().join(", ");
  const got = objects.map(key).sort().join(", ");
  if (expected !== got) errors.push(`${where}: renders ${got}, the resources hold ${expected}`);
  const kustomizationFile = path.join(dir, "kustomization.yaml");
  const text = fs.readFileSync(kustomizationFile, "utf8");
  const [kustomization] = parseDocuments(text, kustomizationFile);
  if (kustomization.namespace) {
    for (const object of objects) {
      if (clusterScoped.has(object.kind)) continue;
      if (object.metadata.namespace !== kustomization.namespace) {
        errors.push(`${where}: ${key(object)} is not in namespace ${kustomization.namespace}`);
      }
    }
  }
}

function main(argv) {
  let kubectl = null;
  const targets = [];
  for (let i = 0; i < argv.length; ++i) {
    if (argv[i] === "--kubectl" && i + 1 < argv.length) kubectl = argv[++i];
    else if (argv[i].startsWith("-")) return usage(`unknown option ${argv[i]}`);
    else targets.push(argv[i]);
  }
  if (targets.length === 0) return usage("no manifests given");
  const errors = [];
  let count = 0;
  for (const target of targets) {
    if (!fs.existsSync(target)) {
      errors.push(`${target}: does not exist`);
    } else if (fs.statSync(target).isDirectory()) {
      const objects = checkKustomization(target, errors);
      count += objects.length;
      if (kubectl) checkRendered(kubectl, target, objects, errors);
    } else {
      count += checkFile(target, errors).length;
    }
  }
  if (errors.length) {
    for (const error of errors) console.error(`invalid: ${error}`);
    return 1;
  }
  console.log(`valid: ${count} objects${kubectl ? ", and as kubectl kustomize renders them" : ""}`);
  return 0;
}

function usage(problem) {
  console.error(`validate_manifests.js: ${problem}`);
  console.error("Usage: node validate_manifests.js [--kubectl PATH] DIR|FILE...");
  return 2;
}

process.exitCode = main(process.argv.slice(2));
